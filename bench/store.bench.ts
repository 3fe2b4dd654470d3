/**
 * Store benchmark against DynamoDB Local (npm run bench). Prints figures and ratios; asserts nothing.
 *
 * 1. Admission + activation latency for one org with 10 and with 5,000 live sandboxes, and their ratio
 *    (goal <= 1.1): quota checks read one usage item, never the org's sandboxes.
 * 2. DynamoDB requests per sandbox lifecycle create -> running -> exec -> terminate, through the API
 *    handler and the workers, counted by an SDK middleware: requests, sequential round trips per step and
 *    the audit linking beside them (goals: <= 10 requests, exec 1 round trip, create 2).
 * 3. Chain-head contention: 100 concurrent creates in one org; transactions retried and p99 latency.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { newId } from '../lib/ids.ts';
import { sandboxView } from '../lib/sandboxes/transition.ts';
import { provisionSandbox } from '../lib/scheduler/provision.ts';
import { terminateSandbox } from '../lib/scheduler/terminate.ts';
import { type Quota, quotaSchema } from '../lib/schemas/tenancy-parts.ts';
import { sandboxItem, usageItem } from '../lib/store/dynamodb/items.ts';
import type { SandboxRecord } from '../lib/store/records.ts';
import { orgPrincipal, sandboxRecord } from '../test/helpers/records.ts';
import { capacityOf, costOf, prices } from './cost.ts';
import { benchPlane, type CountingDynamoDb, countingDynamoDb } from './dynamodb.ts';
import { percentile, printTable } from './stats.ts';

async function main() {
  const db = await countingDynamoDb();
  const { doc } = db;
  const tableName = `bench-${Date.now()}`;
  const { store, plane } = await benchPlane(db, tableName);

  try {
    // 1. Admission + activation with 10 and 5,000 live sandboxes in the org.
    const quota = {
      maxCPU: 1_000_000,
      maxMemoryMiB: 1_000_000_000,
      maxDiskGiB: 100_000_000,
      maxSandboxes: 1_000_000,
      maxQueued: 100_000,
    };
    const rows: string[][] = [];
    const medians: number[] = [];
    // Both orgs are seeded first, then sampled alternately, so warm-up and drift fall on both alike.
    const sizes = [10, 5000];
    const orgs = [];
    for (const live of sizes) {
      const org = await plane.tenancy.createOrg({ name: `live-${live}`, quota });
      await seedRunning(org.id, live, quota);
      orgs.push(org);
    }
    const samples: number[][] = sizes.map(() => []);
    for (let i = 0; i < 400; i++) {
      for (const [index, org] of orgs.entries()) {
        const started = performance.now();
        const { sandbox } = await plane.sandboxes.create(orgPrincipal(org.id), {});
        const record = await store.getSandbox(org.id, sandbox.id);
        if (record === undefined) throw new Error('lost');
        await store.updateSandbox(record, { status: 'provisioning', pool: 'fake' }, { poolLimit: 0 });
        // The first 50 rounds warm up the JIT (here and in DynamoDB Local) and the connection pool.
        if (i >= 50) samples[index]?.push(performance.now() - started);
      }
    }
    sizes.forEach((live, index) => {
      const median = percentile(samples[index] ?? [], 50);
      medians.push(median);
      rows.push([String(live), median.toFixed(2), percentile(samples[index] ?? [], 99).toFixed(2)]);
    });
    printTable('Admission + activation latency (ms), one org', ['live sandboxes', 'p50', 'p99'], rows);
    console.log(
      `ratio p50(5000) / p50(10) = ${((medians[1] ?? 0) / (medians[0] ?? 1)).toFixed(3)}  (goal <= 1.1)\n`,
    );

    // 2. DynamoDB requests per lifecycle, through the API handler and the workers, on a plane wired as
    // deployed (runtime pools read from the store, audit records linked inline after each change).
    await lifecycleRequests(db);

    // 3. Chain-head contention: 100 concurrent creates in one org.
    const busy = await plane.tenancy.createOrg({ name: 'contended', quota });
    const principal = orgPrincipal(busy.id);
    const retriesBefore = store.stats.conflictRetries + store.stats.linkRetries;
    const transactionsBefore = store.stats.transactions;
    const latencies = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const started = performance.now();
        await plane.sandboxes.create(principal, {});
        return performance.now() - started;
      }),
    );
    const linked = store.linkAudit(busy.id);
    await linked;
    const retries = store.stats.conflictRetries + store.stats.linkRetries - retriesBefore;
    const transactions = store.stats.transactions - transactionsBefore;
    printTable(
      '100 concurrent creates in one org (audit records through the outbox, then linked)',
      ['transactions incl. linking', 'retries', 'retries per create', 'p50 ms', 'p99 ms'],
      [
        [
          String(transactions),
          String(retries),
          (retries / 100).toFixed(2),
          percentile(latencies, 50).toFixed(1),
          percentile(latencies, 99).toFixed(1),
        ],
      ],
    );
  } finally {
    await db.stop();
  }

  /** Seeds running sandboxes with their usage directly: admission must not read them, so how they got there is moot. */
  async function seedRunning(orgId: string, count: number, quota: Partial<Quota>) {
    const now = new Date().toISOString();
    const records: SandboxRecord[] = Array.from({ length: count }, () => ({
      ...sandboxTemplate(orgId, now),
      id: newId('sandbox'),
    }));
    for (let i = 0; i < records.length; i += 25) {
      await doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [tableName]: records.slice(i, i + 25).map((r) => ({ PutRequest: { Item: sandboxItem(r) } })),
          },
        }),
      );
    }
    await doc.send(
      new BatchWriteCommand({
        RequestItems: {
          [tableName]: [
            {
              PutRequest: {
                Item: usageItem(
                  orgId,
                  {
                    cpu: count,
                    memoryMiB: count * 1024,
                    diskGiB: count * 10,
                    sandboxes: count,
                    snapshots: 0,
                  },
                  quotaSchema.parse(quota),
                ),
              },
            },
          ],
        },
      }),
    );
    // The API view of a seeded record must parse, or the seed is not what the store would hold.
    sandboxView(records[0] ?? sandboxTemplate(orgId, now));
  }
}

/**
 * One sandbox's lifecycle, create -> running -> exec -> terminate, counted step by step: the requests of
 * the API and the workers, their sequential round trips, and the audit linking each change starts. The
 * first lifecycle warms the container (the key's org remembered, the pools' version loaded), as any
 * container past its first requests is; the second is counted.
 */
async function lifecycleRequests(db: CountingDynamoDb): Promise<void> {
  const { store, plane } = await benchPlane(db, `bench-lifecycle-${Date.now()}`, { linkInline: true });
  const quota = {
    maxCPU: 1000,
    maxMemoryMiB: 1_000_000,
    maxDiskGiB: 100_000,
    maxSandboxes: 1000,
    maxQueued: 1000,
  };
  const org = await plane.tenancy.createOrg({ name: 'lifecycle', quota });
  const { key } = await plane.tenancy.createKey(org.id, { name: 'bench', role: 'member' });
  await store.installation();
  const http = async (method: string, path: string, body?: unknown) => {
    const response = await plane.handleHttp({
      method,
      path,
      query: {},
      headers: { authorization: `Bearer ${key}` },
      body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      requestId: 'bench',
    });
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}`);
    return response;
  };
  const run = async (count: (label: string, work: () => Promise<unknown>) => Promise<void>) => {
    let id = '';
    await count('POST /v1/sandboxes', async () => {
      id = z
        .object({ id: z.string() })
        .parse(JSON.parse(String((await http('POST', '/v1/sandboxes', {})).body))).id;
    });
    await count('provision worker', () => provisionSandbox(plane, { sandboxId: id, orgId: org.id }));
    await count('POST /v1/sandboxes/{id}/exec', () =>
      http('POST', `/v1/sandboxes/${id}/exec`, { command: 'true' }),
    );
    await count('DELETE /v1/sandboxes/{id}', () => http('DELETE', `/v1/sandboxes/${id}`));
    await count('terminate worker', () => terminateSandbox(plane, { sandboxId: id, orgId: org.id }, 1));
  };
  await run(async (_label, work) => {
    await work();
    await store.linkingIdle();
  });
  const rows: string[][] = [];
  const total = { requests: 0, roundTrips: 0, linking: 0 };
  const capacity = { read: 0, write: 0 };
  let durationMs = 0;
  let events = 0;
  const stop = db.listen((command, input, output) => {
    if (output === undefined) return;
    const used = capacityOf(command, input, output);
    capacity.read += used.read;
    capacity.write += used.write;
    // Each audited change writes one outbox record; linking publishes it as one lifecycle event.
    if (command === 'TransactWriteItemsCommand' && !JSON.stringify(input).includes('"AUDITHEAD"'))
      events += (JSON.stringify(input).match(/#OUTBOX","SK"/g) ?? []).length;
  });
  await run(async (label, work) => {
    const before = db.counts();
    const started = performance.now();
    await work();
    durationMs += performance.now() - started;
    await store.linkingIdle();
    const after = db.counts();
    const own = after.requests - after.linking - (before.requests - before.linking);
    const trips = after.roundTrips - before.roundTrips;
    const linking = after.linking - before.linking;
    total.requests += own;
    total.roundTrips += trips;
    total.linking += linking;
    rows.push([label, String(own), String(trips), String(linking)]);
  });
  stop();
  rows.push(['lifecycle', String(total.requests), String(total.roundTrips), String(total.linking)]);
  printTable(
    'DynamoDB requests per sandbox lifecycle (a warm container; linking runs beside the request path)',
    ['step', 'requests', 'sequential round trips', 'audit linking requests'],
    rows,
  );
  console.log(
    `requests per lifecycle = ${total.requests} (goal <= 10), plus ${total.linking} linking its audit records; ` +
      `exec ${rows[2]?.[2]} round trip(s) (goal 1), create ${rows[0]?.[2]} (goal 2)\n`,
  );
  // Five invocations (create, provision, exec, delete, terminate) as long as they took here; two
  // messages (provision, terminate), each sent, received and deleted; three API calls.
  const use = { capacity, invocations: 5, durationMs, sqsRequests: 6, apiRequests: 3, events };
  const lifecycles = 1000;
  const lines = costOf(use, lifecycles);
  const sum = lines.reduce((total, [, , dollars]) => total + dollars, 0);
  printTable(
    `Cost of ${lifecycles} sandbox lifecycles on AWS (us-east-1 list prices as of ${prices.asOf}; backend time excluded)`,
    ['service', 'per lifecycle', `USD per ${lifecycles}`],
    [
      ...lines.map(([service, what, dollars]) => [service, what, dollars.toFixed(4)]),
      ['total', '', sum.toFixed(4)],
    ],
  );
}

function sandboxTemplate(orgId: string, now: string): SandboxRecord {
  return sandboxRecord(orgId, {
    status: 'running',
    version: 3,
    pool: 'fake',
    backendRef: 'fake_seeded',
    placement: { pool: 'fake', rejected: [], decidedAt: now },
    createdAt: now,
    updatedAt: now,
  });
}

await main();
