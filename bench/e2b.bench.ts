/**
 * The E2B door's per-call cost (npm run bench): `commands.run('true')` through `/e2b` with the E2B SDK,
 * beside the same exec through `/v1` (a synchronous exec) with fetch, on one devhost sandbox of the local
 * runtime (two containers per function), both measured by a client in its own process. The same exec:
 * the SDK asks envd for `/bin/bash -l -c true` (a login shell, its choice), so that is what the REST side
 * runs; what remains between them is the door's own cost (Connect framing, the wrapper that makes the
 * command listable and signalable from any container). Goal: at most 1.2 x at the median.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { parseConfig } from '../lib/config.ts';
import { percentile, printTable } from './stats.ts';

const root = await mkdtemp(join(tmpdir(), 'e2b-bench-'));
const runtime = await startLocalRuntime({
  config: parseConfig({
    devMode: true,
    pools: [{ name: 'local', adapter: 'devhost', config: { root } }],
    e2b: { allowedPools: ['local'] },
  }),
  sweepIntervalSeconds: 0,
  reconcileIntervalSeconds: 0,
});
const rounds = 50;
const warmUp = 10;
try {
  const org = await runtime.plane.tenancy.createOrg({ name: 'bench' });
  const created = await runtime.plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  const apiKey = z.object({ key: z.string(), e2bApiKey: z.string() }).parse(created);
  const client = `
    import { Sandbox } from 'e2b';
    const sandbox = await Sandbox.create({ apiKey: ${JSON.stringify(apiKey.e2bApiKey)} });
    const time = async (call) => {
      const samples = [];
      for (let i = 0; i < ${rounds}; i++) {
        const started = performance.now();
        await call();
        if (i >= ${warmUp}) samples.push(performance.now() - started);
      }
      return samples;
    };
    const rest = () => fetch(${JSON.stringify(runtime.url)} + '/v1/sandboxes/' + sandbox.sandboxId + '/exec', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + ${JSON.stringify(apiKey.key)}, 'content-type': 'application/json' },
      body: JSON.stringify({ args: ['/bin/bash', '-l', '-c', 'true'] }),
    }).then(async (response) => {
      if (response.status !== 200) throw new Error('exec answered ' + response.status);
      await response.json();
    });
    const e2b = () => sandbox.commands.run('true');
    // Interleaved, so a slower moment of the machine falls on both.
    const restSamples = [];
    const e2bSamples = [];
    for (let round = 0; round < 4; round++) {
      restSamples.push(...await time(rest));
      e2bSamples.push(...await time(e2b));
    }
    await sandbox.kill();
    process.stdout.write(JSON.stringify({ rest: restSamples, e2b: e2bSamples }));`;
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', client],
      {
        cwd: process.cwd(),
        env: { ...process.env, E2B_API_URL: `${runtime.url}/e2b`, E2B_SANDBOX_URL: `${runtime.url}/e2b` },
      },
      (error, stdout, stderr) =>
        error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)),
    );
  });
  const samples = z.object({ rest: z.array(z.number()), e2b: z.array(z.number()) }).parse(JSON.parse(output));
  const ratio = percentile(samples.e2b, 50) / percentile(samples.rest, 50);
  printTable(
    "One command, 'true', on a devhost sandbox of the local runtime (ms, client in its own process)",
    ['path', 'p50', 'p90'],
    [
      [
        'POST /v1/sandboxes/{id}/exec (fetch)',
        percentile(samples.rest, 50).toFixed(2),
        percentile(samples.rest, 90).toFixed(2),
      ],
      [
        "commands.run('true') through /e2b (e2b 2.51)",
        percentile(samples.e2b, 50).toFixed(2),
        percentile(samples.e2b, 90).toFixed(2),
      ],
    ],
  );
  console.log(
    `ratio at the median = ${ratio.toFixed(3)}  (goal <= 1.2; +${(percentile(samples.e2b, 50) - percentile(samples.rest, 50)).toFixed(1)} ms)\n`,
  );
} finally {
  await runtime.stop();
  await rm(root, { recursive: true, force: true });
}
