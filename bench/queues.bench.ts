/**
 * Work-queue benchmark through the local runtime (npm run bench). Prints figures; asserts nothing.
 *
 * 1. Throughput: 1,000 sandboxes created over HTTP by 50 concurrent clients on a fake pool; sandboxes per
 *    second from the first create to the last running.
 * 2. Control-plane overhead: with a fake Create that takes exactly 100 ms, create -> running time (from
 *    the record's own timestamps) divided by 100 ms; goal at most 1.2 at the median.
 */
import { FakeAdapter } from '../adapters/fake/fake-adapter.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import type { CreateRequest, Instance } from '../lib/adapter/port.ts';
import { parseConfig } from '../lib/config.ts';
import { percentile, printTable } from './stats.ts';

const bigQuota = {
  maxSandboxes: 100_000,
  maxCPU: 100_000,
  maxMemoryMiB: 1024 ** 3,
  maxDiskGiB: 1024 ** 2,
  maxQueued: 100_000,
};

async function runtimeWith(createDelayMs: number) {
  const fake = new FakeAdapter();
  const create = fake.create.bind(fake);
  fake.create = async (request: CreateRequest): Promise<Instance> => {
    if (createDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, createDelayMs));
    return create(request);
  };
  const runtime = await startLocalRuntime({
    config: parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
    adapters: { fake },
    sweepIntervalSeconds: 0,
  });
  const org = await runtime.plane.tenancy.createOrg({ name: 'bench', quota: bigQuota });
  const { key } = await runtime.plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  return { runtime, org, key };
}

async function postCreate(url: string, key: string): Promise<string> {
  const response = await fetch(`${url}/v1/sandboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 202 || body.id === undefined) throw new Error(`create answered ${response.status}`);
  return body.id;
}

async function throughput() {
  const { runtime, org, key } = await runtimeWith(0);
  try {
    const total = 1000;
    const clients = 50;
    const started = performance.now();
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = 0; i < total / clients; i++) ids.push(await postCreate(runtime.url, key));
      }),
    );
    const accepted = performance.now();
    for (;;) {
      const running = await countRunning(runtime, org.id);
      if (running >= total) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const finished = performance.now();
    printTable(
      'Throughput: 1,000 sandboxes, 50 concurrent HTTP clients, fake pool, memory store',
      ['creates accepted /s', 'create -> running /s', 'total s'],
      [
        [
          (total / ((accepted - started) / 1000)).toFixed(0),
          (total / ((finished - started) / 1000)).toFixed(0),
          ((finished - started) / 1000).toFixed(2),
        ],
      ],
    );
  } finally {
    await runtime.stop();
  }
}

async function countRunning(runtime: Awaited<ReturnType<typeof runtimeWith>>['runtime'], orgId: string) {
  let running = 0;
  let cursor: string | undefined;
  do {
    const page = await runtime.plane.store.listSandboxes(
      orgId,
      { status: 'running' },
      { cursor, limit: 100 },
    );
    running += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return running;
}

async function overhead() {
  const { runtime, org, key } = await runtimeWith(100);
  try {
    const ratios: number[] = [];
    for (let i = 0; i < 60; i++) {
      const id = await postCreate(runtime.url, key);
      for (;;) {
        const record = await runtime.plane.store.getSandbox(org.id, id);
        if (record?.status === 'running') {
          if (i >= 10) ratios.push((Date.parse(record.updatedAt) - Date.parse(record.createdAt)) / 100);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    printTable(
      'Control-plane overhead: create -> running with a 100 ms Create, divided by 100 ms (50 sandboxes, one at a time)',
      ['p50 ratio', 'p90 ratio', 'p99 ratio'],
      [
        [
          percentile(ratios, 50).toFixed(3),
          percentile(ratios, 90).toFixed(3),
          percentile(ratios, 99).toFixed(3),
        ],
      ],
    );
    console.log(`overhead ratio at the median = ${percentile(ratios, 50).toFixed(3)}  (goal <= 1.2)\n`);
  } finally {
    await runtime.stop();
  }
}

await throughput();
await overhead();
