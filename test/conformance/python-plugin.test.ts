import { remoteConfigSchema } from '../../adapters/remote/config.ts';
import { RemoteAdapter } from '../../adapters/remote/remote-adapter.ts';
import { startPythonPlugin } from '../helpers/python-plugin.ts';
import { adapterConformance } from './adapter-conformance.ts';

/**
 * "Any language", proven: the conformance suite against the Python reference plugin
 * (examples/plugins/python, written from the specification alone), through the remote adapter.
 */
adapterConformance('python reference plugin over the adapter protocol', async () => {
  const token = 'python-plugin-token-0123456789';
  const plugin = await startPythonPlugin(token);
  const adapter = new RemoteAdapter(remoteConfigSchema.parse({ endpoint: plugin.url }), token);
  const features = (await adapter.capabilities()).features;
  return {
    adapter,
    features,
    // Paths inside an instance live under its directory on the plugin's host.
    workdir: '/work',
    pwd: /\/fs\/work$/,
    withBadCredentials: () => ({
      adapter: new RemoteAdapter(remoteConfigSchema.parse({ endpoint: plugin.url }), 'not-the-token-0123'),
      credential: 'not-the-token-0123',
    }),
    close: () => plugin.stop(),
  };
});
