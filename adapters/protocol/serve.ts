/**
 * A runnable plugin server: serves a built-in adapter over the adapter HTTP protocol so anyone can try a
 * remote pool locally.
 *
 *   npm run adapter:serve -- --kind fake|devhost [--port 9090] [--host 127.0.0.1] [--token T]
 *                            [--root DIR] [--features exec,files,...]
 *
 * The token may also come from DIFFERENTLY_ADAPTER_TOKEN (so it stays out of the process list).
 */
import { parseArgs } from 'node:util';
import type { ExecutionAdapter } from '../../lib/adapter/port.ts';
import { devhostConfigSchema } from '../devhost/config.ts';
import { DevhostAdapter } from '../devhost/devhost-adapter.ts';
import { FakeAdapter } from '../fake/fake-adapter.ts';
import { createProtocolHandler } from './handler.ts';
import { startAdapterServer } from './server.ts';

const { values } = parseArgs({
  options: {
    kind: { type: 'string', default: 'fake' },
    port: { type: 'string', default: '9090' },
    host: { type: 'string', default: '127.0.0.1' },
    token: { type: 'string' },
    root: { type: 'string' },
    features: { type: 'string' },
    help: { type: 'boolean' },
  },
  strict: true,
});

if (values.help === true) {
  process.stdout.write(
    'Usage: npm run adapter:serve -- --kind fake|devhost [--port N] [--host H] [--token T] [--root DIR] [--features a,b]\n',
  );
  process.exit(0);
}

function build(kind: string): ExecutionAdapter {
  if (kind === 'fake') return new FakeAdapter();
  if (kind === 'devhost')
    return new DevhostAdapter(
      devhostConfigSchema.parse(values.root === undefined ? {} : { root: values.root }),
    );
  process.stderr.write(`--kind must be fake or devhost, not ${kind}\n`);
  process.exit(2);
}

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be a port number, not ${values.port}\n`);
  process.exit(2);
}
const token = values.token ?? process.env.DIFFERENTLY_ADAPTER_TOKEN;
const handler = createProtocolHandler(build(values.kind ?? 'fake'), {
  token,
  features: values.features?.split(',').map((f) => f.trim()),
  onError: (error) => process.stderr.write(`adapter error: ${(error as Error).message}\n`),
});
const server = await startAdapterServer(handler, { port, host: values.host ?? '127.0.0.1' });
process.stdout.write(
  `${values.kind} adapter serving the Differently adapter protocol at ${server.url}/adapter/v1${token ? ' (token required)' : ''}\n`,
);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
