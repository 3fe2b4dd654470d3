/**
 * Warm pools (npm run bench): on the local runtime (two containers per function), a fake pool whose
 * Create takes 2 s, with a warm target of 100 instances of the default shape. Each figure beside its
 * reference from the same run:
 * - create -> first command's output, from the warm pool vs the cold path (a shape no target keeps, so
 *   the same pool builds it): goal at most 0.1 x at the median;
 * - what the control plane adds to a claim: a warm create's answer vs a GET of a sandbox through the same
 *   API (authentication, one store read, the answer): goal at most 40 ms more at the median;
 * - a burst of 100 concurrent creates against a warm pool of 100: all succeed, p95 create -> running
 *   under 1 s.
 */
import * as z from 'zod';
import { FakeAdapter } from '../adapters/fake/fake-adapter.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { parseConfig } from '../lib/config.ts';
import { refillWarmPools } from '../lib/warm/refill.ts';
import { percentile, printTable } from './stats.ts';

const createMs = 2000;
const runtime = await startLocalRuntime({
  config: parseConfig({
    devMode: true,
    pools: [{ name: 'slow', adapter: 'fake', warm: [{ size: 100, maxAgeSeconds: 3600 }] }],
  }),
  adapters: { slow: new FakeAdapter({ delaysMs: { create: createMs } }) },
  sweepIntervalSeconds: 0,
  reconcileIntervalSeconds: 0,
  poolRefreshIntervalSeconds: 0,
});
const view = z.object({ id: z.string(), status: z.string(), warm: z.nullable(z.unknown()) });

try {
  const org = await runtime.plane.tenancy.createOrg({
    name: 'bench',
    quota: {
      maxSandboxes: 1000,
      maxCPU: 1000,
      maxMemoryMiB: 1024 * 1024,
      maxDiskGiB: 100_000,
      maxQueued: 1000,
    },
  });
  const { key } = await runtime.plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as unknown;
  };
  const create = async (body: Record<string, unknown> = {}) =>
    view.parse(await call('POST', '/v1/sandboxes', body));
  const untilRunning = async (id: string) => {
    for (;;) {
      const sandbox = view.parse(await call('GET', `/v1/sandboxes/${id}`));
      if (sandbox.status === 'running') return sandbox;
      if (sandbox.status === 'failed') throw new Error(`sandbox ${id} failed`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  /** Create, wait until running, run one command and read its output: the time to a first answer. */
  const toFirstOutput = async (body: Record<string, unknown>) => {
    const started = performance.now();
    const sandbox = await create(body);
    if (sandbox.status !== 'running') await untilRunning(sandbox.id);
    await call('POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: 'echo ready' });
    return { ms: performance.now() - started, id: sandbox.id, warm: sandbox.warm !== null };
  };
  const fill = async () => {
    const started = performance.now();
    const report = await refillWarmPools(runtime.plane, 120_000);
    return { ms: performance.now() - started, ready: report.targets[0]?.ready ?? 0 };
  };

  const filled = await fill();
  console.log(`warm pool filled: ${filled.ready} ready in ${(filled.ms / 1000).toFixed(1)} s\n`);

  // Interleaved, so a slower moment of the machine falls on both paths.
  const warm: number[] = [];
  const cold: number[] = [];
  const claimMs: number[] = [];
  const getMs: number[] = [];
  const done: string[] = [];
  for (let round = 0; round < 6; round++) {
    const hot = await toFirstOutput({});
    if (!hot.warm) throw new Error('a create of the target shape was not answered warm');
    warm.push(hot.ms);
    const slow = await toFirstOutput({ resources: { cpu: 2 } });
    if (slow.warm) throw new Error('a create of another shape was answered warm');
    cold.push(slow.ms);
    done.push(hot.id, slow.id);
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const claimed = await create({});
      claimMs.push(performance.now() - started);
      if (claimed.warm === null) throw new Error('the warm pool ran dry during the claim figure');
      const read = performance.now();
      await call('GET', `/v1/sandboxes/${claimed.id}`);
      getMs.push(performance.now() - read);
      done.push(claimed.id);
    }
  }
  for (const id of done) await call('DELETE', `/v1/sandboxes/${id}`);

  const refilled = await fill();
  const burstStarted = performance.now();
  const burst = await Promise.allSettled(
    Array.from({ length: 100 }, async () => {
      const started = performance.now();
      const sandbox = await create({});
      const running = sandbox.status === 'running' ? sandbox : await untilRunning(sandbox.id);
      return { ms: performance.now() - started, warm: running.warm !== null };
    }),
  );
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  const succeeded = burst.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const burstMs = succeeded.map((result) => result.ms);

  const row = (name: string, samples: number[]) => [
    name,
    String(samples.length),
    percentile(samples, 50).toFixed(1),
    percentile(samples, 95).toFixed(1),
  ];
  printTable(
    `Warm pools on the local runtime, a fake backend whose Create takes ${createMs} ms (ms)`,
    ['path', 'n', 'p50', 'p95'],
    [
      row('create -> first output, cold path (another shape)', cold),
      row('create -> first output, warm pool', warm),
      row('GET /v1/sandboxes/{id} (the reference round trip)', getMs),
      row('POST /v1/sandboxes answered from the warm pool', claimMs),
      row(`burst of 100 against a pool of ${refilled.ready}: create -> running`, burstMs),
    ],
  );
  const ratio = percentile(warm, 50) / percentile(cold, 50);
  const added = percentile(claimMs, 50) - percentile(getMs, 50);
  console.log(`warm / cold at the median = ${ratio.toFixed(3)}  (goal <= 0.1)`);
  console.log(
    `claim - GET at the median = ${added.toFixed(1)} ms  (goal <= 40 ms; claim / GET = ${(percentile(claimMs, 50) / percentile(getMs, 50)).toFixed(2)})`,
  );
  console.log(
    `burst: ${succeeded.length} of 100 succeeded (${succeeded.filter((r) => r.warm).length} warm) in ${burstSeconds.toFixed(2)} s; p95 create -> running = ${percentile(burstMs, 95).toFixed(1)} ms  (goal: all, p95 < 1000 ms)\n`,
  );
} finally {
  await runtime.stop();
}
