import { describe, it } from 'vitest';
import { remoteConfigSchema } from '../../adapters/remote/config.ts';
import { RemoteAdapter } from '../../adapters/remote/remote-adapter.ts';
import { adapterConformance } from './adapter-conformance.ts';

/**
 * The conformance suite against a plugin author's own server:
 *
 *   DIFFERENTLY_CONFORMANCE_ENDPOINT=https://lab-adapter.internal:8443 \
 *   DIFFERENTLY_CONFORMANCE_TOKEN=... DIFFERENTLY_CONFORMANCE_WORKDIR=/tmp npm run conformance
 *
 * DIFFERENTLY_CONFORMANCE_PWD, a regular expression, is what `pwd` prints in the work directory when
 * that is not the work directory itself (a plugin that maps instance paths onto its host).
 *
 * Skipped, with the reason printed, when no endpoint is given.
 */
const endpoint = process.env.DIFFERENTLY_CONFORMANCE_ENDPOINT;

if (endpoint === undefined || endpoint === '') {
  describe('adapter conformance: your plugin', () => {
    it.skip('set DIFFERENTLY_CONFORMANCE_ENDPOINT (and _TOKEN, _WORKDIR) to run the suite against a plugin server', () => {});
  });
} else {
  adapterConformance(
    `plugin at ${endpoint}`,
    async () => {
      const adapter = new RemoteAdapter(
        remoteConfigSchema.parse({ endpoint }),
        process.env.DIFFERENTLY_CONFORMANCE_TOKEN,
      );
      const workdir = process.env.DIFFERENTLY_CONFORMANCE_WORKDIR ?? '/tmp';
      // What `pwd` prints in the work directory, when the plugin's commands see other paths than its files.
      const pwd = process.env.DIFFERENTLY_CONFORMANCE_PWD;
      return {
        adapter,
        features: (await adapter.capabilities()).features,
        workdir,
        ...(pwd !== undefined && pwd !== '' && { pwd: new RegExp(pwd) }),
      };
    },
    { timeoutMs: 300_000 },
  );
}
