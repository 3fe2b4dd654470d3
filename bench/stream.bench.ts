/**
 * Streamed exec latency (npm run bench): time from starting a command to receiving its first stdout
 * chunk, through the local runtime's streamed exec over HTTP, as a ratio to the same measured directly on
 * the devhost adapter. Goal: at most 1.5 at the median.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { devhostConfigSchema } from '../adapters/devhost/config.ts';
import { DevhostAdapter } from '../adapters/devhost/devhost-adapter.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { parseConfig } from '../lib/config.ts';
import { percentile, printTable } from './stats.ts';

const root = await mkdtemp(join(tmpdir(), 'stream-bench-'));
const adapter = new DevhostAdapter(devhostConfigSchema.parse({ root }));
const runtime = await startLocalRuntime({
  config: parseConfig({ devMode: true, pools: [{ name: 'local', adapter: 'devhost', config: { root } }] }),
  adapters: { local: adapter },
  sweepIntervalSeconds: 0,
  reconcileIntervalSeconds: 0,
});
const command = 'echo first; sleep 0.05; echo second';
try {
  const org = await runtime.plane.tenancy.createOrg({ name: 'bench' });
  const { key } = await runtime.plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  const principal = { kind: 'org', orgId: org.id, keyId: 'key_x', role: 'member', projectId: null } as const;
  const { sandbox } = await runtime.plane.sandboxes.create(principal, {});
  for (;;) {
    if ((await runtime.plane.store.getSandbox(org.id, sandbox.id))?.status === 'running') break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }

  const direct: number[] = [];
  for (let i = 0; i < 60; i++) {
    const started = performance.now();
    let first = 0;
    await adapter.execStream(sandbox.id, { command }, () => {
      if (first === 0) first = performance.now() - started;
    });
    if (i >= 10) direct.push(first);
  }

  // Through the local runtime (HTTP, authentication, the record, the adapter, NDJSON back), measured by a
  // client in its own process, as real clients are: a client sharing the server's event loop would add
  // its own work to every sample.
  const client = `
    const samples = [];
    for (let i = 0; i < 60; i++) {
      const started = performance.now();
      const response = await fetch(${JSON.stringify(`${runtime.url}/v1/sandboxes/${sandbox.id}/exec?stream=1`)}, {
        method: 'POST',
        headers: { authorization: ${JSON.stringify(`Bearer ${key}`)}, 'content-type': 'application/json' },
        body: ${JSON.stringify(JSON.stringify({ command }))},
      });
      let received = 0;
      for await (const chunk of response.body) {
        if (received === 0 && new TextDecoder().decode(chunk).includes('"stdout"')) received = performance.now() - started;
      }
      if (i >= 10) samples.push(received);
    }
    process.stdout.write(JSON.stringify(samples));`;
  const output = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', client], (error, stdout) =>
      error === null ? resolve(stdout) : reject(error),
    );
  });
  const viaApi = z.array(z.number()).parse(JSON.parse(output));
  const ratio = percentile(viaApi, 50) / percentile(direct, 50);
  printTable(
    'Time to the first stdout chunk of a command (ms), devhost pool',
    ['path', 'p50', 'p90'],
    [
      ['directly on the adapter', percentile(direct, 50).toFixed(2), percentile(direct, 90).toFixed(2)],
      [
        'streamed exec through the local runtime (client in its own process)',
        percentile(viaApi, 50).toFixed(2),
        percentile(viaApi, 90).toFixed(2),
      ],
    ],
  );
  console.log(`ratio at the median = ${ratio.toFixed(3)}  (goal <= 1.5)\n`);
} finally {
  await runtime.stop();
  await rm(root, { recursive: true, force: true });
}
