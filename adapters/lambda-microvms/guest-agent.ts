/**
 * The guest agent a Lambda MicroVMs image runs (examples/lambda-microvms/Dockerfile): the adapter HTTP
 * protocol over the devhost adapter, holding the VM's one sandbox.
 *
 *   node adapters/lambda-microvms/guest-agent.ts [--port 8080] [--host 0.0.0.0] [--root /var/lib/differently]
 *                                               [--hooks-port 9000]
 *
 * With --hooks-port, it also answers the service's lifecycle hooks (POST /aws/lambda-microvms/runtime/v1/
 * ready, validate, run, resume, suspend, terminate) with 200 once the protocol server listens, so the
 * image's snapshot is taken with the agent up (the image's `hooks.port` must name the same port).
 *
 * No token of its own: the VM's endpoint admits only requests carrying an auth token minted by
 * CreateMicrovmAuthToken, which IAM grants to the control plane's functions alone.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { devhostConfigSchema } from '../devhost/config.ts';
import { DevhostAdapter } from '../devhost/devhost-adapter.ts';
import { createProtocolHandler } from '../protocol/handler.ts';
import { startAdapterServer } from '../protocol/server.ts';
import { OneSandboxGuest } from './guest.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8080' },
    host: { type: 'string', default: '0.0.0.0' },
    root: { type: 'string', default: '/var/lib/differently' },
    'hooks-port': { type: 'string' },
  },
  strict: true,
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  process.stderr.write(`--port must be a port number, not ${values.port}\n`);
  process.exit(2);
}
const root = values.root ?? '/var/lib/differently';
// Inside the VM, the VM is the boundary: commands run as the guest's processes (bubblewrap where the
// image has it, which AL2023 does not by default).
const host = new DevhostAdapter(devhostConfigSchema.parse({ root }));
const handler = createProtocolHandler(new OneSandboxGuest(host, root), {
  onError: (error) => process.stderr.write(`guest agent error: ${(error as Error).message}\n`),
});
const server = await startAdapterServer(handler, { port, host: values.host ?? '0.0.0.0' });
process.stdout.write(`guest agent listening at ${server.url}/adapter/v1\n`);

const hookPath = /^\/aws\/lambda-microvms\/runtime\/v1\/(ready|validate|run|resume|suspend|terminate)$/;
const hooks =
  values['hooks-port'] === undefined
    ? undefined
    : createServer((req, res) => {
        // Nothing to do at any transition: the sandbox's state lives on the VM's disk and memory.
        req.resume();
        res.writeHead(req.method === 'POST' && hookPath.test(req.url ?? '') ? 200 : 404).end();
      });
if (hooks !== undefined) {
  await new Promise<void>((resolve) =>
    hooks.listen(Number(values['hooks-port']), values.host ?? '0.0.0.0', resolve),
  );
  process.stdout.write(`lifecycle hooks at port ${(hooks.address() as AddressInfo).port}\n`);
}
const stop = () => {
  hooks?.close();
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
