/**
 * The soak: many sandboxes, concurrent clients across orgs whose quotas force queueing, fake pools that
 * fail at random with every error code, workers killed between two steps, random operations. At the end,
 * after the reconciler and the sweep have run, the invariants that say nothing was lost, leaked or let
 * in, with counts, and throughput and create->running latencies.
 *
 * Used by `npm run soak` (1,000 sandboxes) and by a small run inside `npm test` (test/soak/soak.test.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { percentile } from '../../bench/stats.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import type { CreateRequest, Instance } from '../../lib/adapter/port.ts';
import { parseConfig } from '../../lib/config.ts';
import { errors } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import { holdingsOf, type Usage, usageLimits } from '../../lib/quotas/usage.ts';
import { reconcile } from '../../lib/scheduler/reconcile.ts';
import { sweep } from '../../lib/scheduler/sweep.ts';
import { isTerminal, type SandboxStatus, sandboxStatuses } from '../../lib/schemas/sandbox-status.ts';
import type { Quota } from '../../lib/schemas/tenancy-parts.ts';
import { installationChain } from '../../lib/store/audit/port.ts';
import type { Store } from '../../lib/store/port.ts';
import type { SandboxRecord } from '../../lib/store/records.ts';
import { verifyOrgChain } from '../../lib/tenancy/audit-trail.ts';
import { DifferentlyClient, DifferentlyError } from '../../sdk/index.ts';

export interface SoakOptions {
  sandboxes: number;
  clients: number;
  orgs: number;
  /** The state store: a DynamoDbStore on DynamoDB Local in the real runs. */
  store: Store;
  seed?: number;
  /** Chance of each injected fault per adapter call (each error code, dropped responses, slow deletes). */
  faultRate?: number;
  /** Chance that a worker dies at a store write (before it, or after it and before the ack). */
  killRate?: number;
  log?: Log;
  /** Seconds to wait for every sandbox to settle after the clients finish. */
  settleSeconds?: number;
}

export interface Invariant {
  name: string;
  ok: boolean;
  detail: string;
}

export interface SoakReport {
  created: number;
  byStatus: Record<string, number>;
  faults: Record<string, number>;
  workerKills: number;
  workerRestarts: number;
  clientErrors: Record<string, number>;
  quotaSamples: number;
  durationSeconds: number;
  throughputPerSecond: number;
  createToRunningMs: { p50: number; p99: number; count: number };
  invariants: Invariant[];
}

/** mulberry32: a small seeded generator, so a soak can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fake backend that fails: each error code, dropped Create answers and slow, failing Deletes. */
export class ChaosAdapter extends FakeAdapter {
  readonly #random: () => number;
  readonly #rate: number;
  readonly faults: Record<string, number>;

  constructor(random: () => number, rate: number, faults: Record<string, number>) {
    super();
    this.#random = random;
    this.#rate = rate;
    this.faults = faults;
  }

  #count(name: string): void {
    this.faults[name] = (this.faults[name] ?? 0) + 1;
  }

  override async create(request: CreateRequest): Promise<Instance> {
    const roll = this.#random();
    const r = this.#rate;
    if (roll < r) {
      this.#count('insufficient_capacity');
      throw errors.insufficientCapacity('chaos: no room right now');
    }
    if (roll < 2 * r) {
      this.#count('sandbox_failed');
      throw errors.sandboxFailed('chaos: this sandbox failed to start');
    }
    if (roll < 3 * r) {
      this.#count('provider_unavailable');
      throw errors.providerUnavailable('chaos: the backend is unreachable');
    }
    if (roll < 4 * r) {
      this.#count('dropped_create_response');
      await super.create(request);
      throw errors.providerUnavailable('chaos: the answer was lost after the backend acted');
    }
    return super.create(request);
  }

  override async delete(ref: string): Promise<void> {
    if (this.#random() < this.#rate) {
      this.#count('slow_delete');
      await new Promise((resolve) => setTimeout(resolve, 100 + this.#random() * 400));
    }
    if (this.#random() < this.#rate) {
      this.#count('failed_delete');
      throw errors.providerUnavailable('chaos: delete failed');
    }
    return super.delete(ref);
  }
}

class WorkerKilled extends Error {
  override readonly name = 'WorkerKilled';
}

/**
 * A store whose writes, inside a worker, sometimes never happen (the worker died before them) or happen
 * and then the worker dies before acknowledging its message. Either way SQS delivers the message again.
 */
function killingStore(
  store: Store,
  inWorker: AsyncLocalStorage<boolean>,
  random: () => number,
  rate: number,
  kills: { count: number },
): Store {
  let writes = 0;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'updateSandbox' || typeof value !== 'function')
        return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const worker = inWorker.getStore() === true;
        if (worker) writes++;
        // At least one kill per storm, whatever the interleaving does to the random draws: the tenth
        // worker write dies if none has yet (a small storm could otherwise draw no kill at all).
        const forced = worker && kills.count === 0 && writes >= 10;
        const killed = forced || (worker && random() < rate);
        const before = killed && random() < 0.5;
        if (before) {
          kills.count++;
          throw new WorkerKilled('worker killed before a write');
        }
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (killed) {
          kills.count++;
          throw new WorkerKilled('worker killed after a write, before the ack');
        }
        return result;
      };
    },
  });
}

const steady: ReadonlySet<SandboxStatus> = new Set(['running', 'stopped', 'paused']);
/**
 * Every status a sandbox passes through on its way to a terminal or steady one, the lifecycle moves'
 * (stopping, starting, pausing, resuming) included: settling waits for all of them, so a stop still in the
 * operations worker's hands is not judged unsettled.
 */
const transitional: SandboxStatus[] = sandboxStatuses.filter(
  (status) => !isTerminal(status) && !steady.has(status),
);

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const random = seededRandom(options.seed ?? 1);
  const faults: Record<string, number> = {};
  const kills = { count: 0 };
  const inWorker = new AsyncLocalStorage<boolean>();
  const poolNames = ['chaos-a', 'chaos-b', 'chaos-c'];
  const adapters = Object.fromEntries(
    poolNames.map((name) => [name, new ChaosAdapter(random, options.faultRate ?? 0.1, faults)]),
  );
  const store = killingStore(options.store, inWorker, random, options.killRate ?? 0.03, kills);
  const runtime: LocalRuntime = await startLocalRuntime({
    config: parseConfig({
      devMode: true,
      pools: poolNames.map((name) => ({ name, adapter: 'fake' })),
      scheduler: {
        maxAttempts: 3,
        provisionTimeoutSeconds: 10,
        terminateTimeoutSeconds: 10,
        lostMessageSeconds: 60,
        stuckTerminationSeconds: 60,
        reconcileGraceSeconds: 2,
      },
    }),
    store,
    adapters,
    ...(options.log !== undefined && { log: options.log }),
    queues: { provision: { visibilityTimeoutSeconds: 5 }, terminate: { visibilityTimeoutSeconds: 5 } },
    wrapWorker: (_queue, handler) => (event) => inWorker.run(true, () => handler(event)),
    sweepIntervalSeconds: 5,
    reconcileIntervalSeconds: 5,
    poolRefreshIntervalSeconds: 1,
  });
  try {
    return await drive(runtime, options, random, faults, kills);
  } finally {
    await runtime.stop();
  }
}

async function drive(
  runtime: LocalRuntime,
  options: SoakOptions,
  random: () => number,
  faults: Record<string, number>,
  kills: { count: number },
): Promise<SoakReport> {
  const store = options.store;
  const admin = new DifferentlyClient({ endpoint: runtime.url, apiKey: runtime.adminKey });
  // Quotas that force queueing: few slots per org, many clients wanting them.
  const quota: Partial<Quota> = { maxSandboxes: 6, maxCPU: 6, maxSnapshots: 4, maxQueued: 1000 };
  const orgs = await Promise.all(
    Array.from({ length: options.orgs }, async (_, i) => {
      const org = await admin.admin.createOrg({ name: `soak-${i}`, quota });
      const { key } = await admin.admin.createKey(org.id, { name: 'soak' });
      return {
        id: org.id,
        quota: org.quota,
        client: new DifferentlyClient({ endpoint: runtime.url, apiKey: key, attempts: 2, retryBaseMs: 50 }),
      };
    }),
  );

  // Sampled all along: no org's usage above its quota, ever.
  let quotaSamples = 0;
  const overQuota: string[] = [];
  let sampling = true;
  const previouslyOver = new Set<string>();
  const sampler = (async () => {
    while (sampling) {
      for (const org of orgs) {
        // Both what the store says and what the records hold: accounting that lied would pass the first.
        // The records are read page by page, not as one snapshot, so a sandbox released and another
        // reserved between two pages can both show: an excess counts only when two samples in a row see it.
        const usage = await store.getUsage(org.id);
        const held = heldBy(await allSandboxes(store, org.id));
        quotaSamples++;
        const heldOver: string[] = [];
        for (const { field, limit } of usageLimits) {
          if (field === 'snapshots') continue;
          if (usage[field] > org.quota[limit] + 1e-9)
            overQuota.push(`${org.id} stored ${field} ${usage[field]} > ${org.quota[limit]}`);
          if (held[field] > org.quota[limit] + 1e-9)
            heldOver.push(`${org.id} held ${field} ${held[field]} > ${org.quota[limit]}`);
        }
        if (heldOver.length > 0 && previouslyOver.has(org.id)) overQuota.push(...heldOver);
        if (heldOver.length > 0) previouslyOver.add(org.id);
        else previouslyOver.delete(org.id);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();

  const clientErrors: Record<string, number> = {};
  const note = (error: unknown) => {
    const code =
      error instanceof DifferentlyError ? `${error.status} ${error.code}` : `client ${(error as Error).name}`;
    clientErrors[code] = (clientErrors[code] ?? 0) + 1;
  };
  // Workers restarted at random moments while the clients run (held, undispatched messages are lost with
  // the old pollers and come back after their visibility timeout).
  let restarting = true;
  let restarts = 0;
  const restarter = (async () => {
    while (restarting) {
      await new Promise((resolve) => setTimeout(resolve, 500 + random() * 2500));
      if (!restarting) break;
      await runtime.restartWorkers();
      restarts++;
    }
  })();
  const perClient = Math.ceil(options.sandboxes / options.clients);
  let created = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.clients }, async (_, c) => {
      const org = orgs[c % orgs.length];
      if (org === undefined) return;
      const mine: string[] = [];
      for (let i = 0; i < perClient && created < options.sandboxes; i++) {
        created++;
        try {
          const sandbox = await org.client.createSandbox({
            resources: { cpu: 1, memoryMiB: 256, diskGiB: 1 },
            queueTimeoutSeconds: 120,
          });
          mine.push(sandbox.id);
        } catch (error) {
          note(error);
        }
        // A few random operations on this client's sandboxes between creates.
        for (let op = 0; op < 2 && mine.length > 0; op++) {
          const id = mine[Math.floor(random() * mine.length)] ?? '';
          const roll = random();
          try {
            if (roll < 0.3) await org.client.exec(id, { command: 'echo soak' });
            else if (roll < 0.45) await org.client.stop(id);
            else if (roll < 0.6) await org.client.start(id);
            else if (roll < 0.7) {
              const snapshot = await org.client.createSnapshot(id);
              await org.client.deleteSnapshot(snapshot.id);
            } else if (roll < 0.9 && mine.length > 2) {
              await org.client.deleteSandbox(id);
              mine.splice(mine.indexOf(id), 1);
            }
          } catch (error) {
            note(error);
          }
        }
      }
      // Most sandboxes are deleted at the end; the last one of each client stays, to be a steady one.
      for (const id of mine.slice(0, -1)) {
        try {
          await org.client.deleteSandbox(id);
        } catch (error) {
          note(error);
        }
      }
    }),
  );
  restarting = false;
  await restarter;
  const clientSeconds = (performance.now() - started) / 1000;

  // Settle: everything in a terminal or steady state (timers keep sweeping and reconciling meanwhile).
  const deadline = Date.now() + (options.settleSeconds ?? 300) * 1000;
  const settle = async () => {
    for (;;) {
      let moving = 0;
      for (const status of transitional)
        moving += (await store.listSandboxesByStatus(status, { limit: 100 })).items.length;
      if (moving === 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };
  await settle();
  // The last word to the reconciler and the sweep, as in production after a storm, once the last
  // changes are out of the reconciler's grace.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  await reconcileAndSweep(runtime);
  // What that pass set moving (a stalled provisioning it requeued is provisioned again) settles too,
  // within the same deadline.
  await settle();
  sampling = false;
  await sampler;

  const records: SandboxRecord[] = [];
  for (const org of orgs) records.push(...(await allSandboxes(store, org.id)));
  const byStatus: Record<string, number> = {};
  for (const r of records) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;

  const invariants: Invariant[] = [];
  const unsettled = records.filter((r) => !isTerminal(r.status) && !steady.has(r.status));
  const failedWithoutReason = records.filter((r) => r.status === 'failed' && (r.statusMessage ?? '') === '');
  invariants.push({
    name: 'every sandbox is terminal or steady, failures with a reason',
    ok: unsettled.length === 0 && failedWithoutReason.length === 0,
    detail: `${records.length} sandboxes; unsettled ${unsettled.length}${
      unsettled.length > 0
        ? ` (${unsettled
            .slice(0, 3)
            .map((r) => `${r.id} ${r.status}`)
            .join(', ')})`
        : ''
    }; failed without a reason ${failedWithoutReason.length}`,
  });

  const installation = await store.installation();
  const live = records.filter((r) => steady.has(r.status));
  const instances: { pool: string; instance: Instance }[] = [];
  for (const pool of runtime.plane.pools.list()) {
    if (pool.adapter === undefined) continue;
    for (const instance of await pool.adapter.list(installation))
      instances.push({ pool: pool.config.name, instance });
  }
  const byRef = new Map(live.map((r) => [r.backendRef, r]));
  const orphans = instances.filter(({ instance }) => byRef.get(instance.ref)?.id !== instance.sandboxId);
  const perSandbox = new Map<string, number>();
  for (const { instance } of instances)
    perSandbox.set(instance.sandboxId, (perSandbox.get(instance.sandboxId) ?? 0) + 1);
  const duplicates = [...perSandbox.values()].filter((n) => n > 1).length;
  const missing = live.filter((r) => !instances.some(({ instance }) => instance.ref === r.backendRef));
  invariants.push({
    name: 'backend instances match records one to one',
    ok: orphans.length === 0 && duplicates === 0 && missing.length === 0,
    detail: `${instances.length} instances, ${live.length} live records; orphans ${orphans.length}, duplicates ${duplicates}, live records without an instance ${missing.length}${orphans
      .slice(0, 3)
      .map(({ pool, instance }) => {
        const record = records.find((r) => r.id === instance.sandboxId);
        return ` (${pool} ${instance.ref} of ${instance.sandboxId}: record ${record?.status} on ${record?.pool} ref ${record?.backendRef})`;
      })
      .join('')}`,
  });

  let usageMismatches = 0;
  const usageNotes: string[] = [];
  for (const org of orgs) {
    const stored = await store.getUsage(org.id);
    const expected: Usage = {
      ...heldBy(records.filter((x) => x.orgId === org.id)),
      snapshots: await allSnapshots(store, org.id),
    };
    for (const { field } of usageLimits) {
      if (Math.abs(stored[field] - expected[field]) > 1e-6) {
        usageMismatches++;
        usageNotes.push(`${org.id} ${field}: stored ${stored[field]}, live ${expected[field]}`);
      }
    }
  }
  invariants.push({
    name: "each org's usage equals the sum of its live sandboxes",
    ok: usageMismatches === 0,
    detail: `${orgs.length} orgs x ${usageLimits.length} counters; mismatches ${usageMismatches}${usageNotes.length > 0 ? ` (${usageNotes.slice(0, 3).join('; ')})` : ''}`,
  });
  invariants.push({
    name: 'no org ever exceeded its quota',
    ok: overQuota.length === 0,
    detail: `${quotaSamples} samples; over quota ${overQuota.length}${overQuota.length > 0 ? ` (${overQuota.slice(0, 3).join('; ')})` : ''}`,
  });

  let chainEvents = 0;
  const broken: string[] = [];
  for (const chain of [...orgs.map((o) => o.id), installationChain]) {
    await store.linkAudit(chain);
    const result = await verifyOrgChain(store, chain);
    chainEvents += result.checked;
    if (!result.ok) broken.push(`${chain} at ${result.firstBroken?.seq}`);
  }
  invariants.push({
    name: 'every audit chain verifies',
    ok: broken.length === 0,
    detail: `${orgs.length + 1} chains, ${chainEvents} events; broken ${broken.length}${broken.length > 0 ? ` (${broken.join(', ')})` : ''}`,
  });
  const internal = Object.entries(clientErrors).filter(([code]) => code.startsWith('500'));
  invariants.push({
    name: 'no request answered 500',
    ok: internal.length === 0,
    detail: `client-visible errors: ${
      Object.entries(clientErrors)
        .map(([k, v]) => `${k} x${v}`)
        .join(', ') || 'none'
    }`,
  });

  const latencies = await createToRunning(
    store,
    orgs.map((o) => o.id),
  );
  return {
    created,
    byStatus,
    faults,
    workerKills: kills.count,
    workerRestarts: restarts,
    clientErrors,
    quotaSamples,
    durationSeconds: clientSeconds,
    throughputPerSecond: created / clientSeconds,
    createToRunningMs: latencies,
    invariants,
  };
}

/** Two full reconcile passes (a pass the timer's own run holds the lease for does not count) and sweeps. */
async function reconcileAndSweep(runtime: LocalRuntime): Promise<void> {
  let ran = 0;
  for (let attempt = 0; ran < 2 && attempt < 40; attempt++) {
    if ((await reconcile(runtime.plane)).ran) ran++;
    else await new Promise((resolve) => setTimeout(resolve, 250));
    await sweep(runtime.plane);
  }
}

/** What these sandboxes hold of their org's quota, by their statuses. */
function heldBy(records: readonly SandboxRecord[]): Usage {
  const total: Usage = { cpu: 0, memoryMiB: 0, diskGiB: 0, sandboxes: 0, snapshots: 0 };
  for (const r of records) {
    const h = holdingsOf(r.status, r.resources);
    total.cpu += h.cpu;
    total.memoryMiB += h.memoryMiB;
    total.diskGiB += h.diskGiB;
    total.sandboxes += h.sandboxes;
  }
  return total;
}

async function allSandboxes(store: Store, orgId: string): Promise<SandboxRecord[]> {
  const out: SandboxRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listSandboxes(orgId, {}, { limit: 100, cursor });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

async function allSnapshots(store: Store, orgId: string): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listSnapshots(orgId, { limit: 100, cursor });
    count += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return count;
}

/** From each sandbox's `sandbox.created` audit event to its first `sandbox.running`. */
async function createToRunning(
  store: Store,
  orgIds: string[],
): Promise<{ p50: number; p99: number; count: number }> {
  const samples: number[] = [];
  for (const orgId of orgIds) {
    const createdAt = new Map<string, number>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await store.listAudit(orgId, { limit: 100, cursor });
      for (const event of page.items) {
        if (event.action === 'sandbox.created') createdAt.set(event.target, Date.parse(event.at));
        if (event.action === 'sandbox.running' && !seen.has(event.target)) {
          seen.add(event.target);
          const from = createdAt.get(event.target);
          if (from !== undefined) samples.push(Date.parse(event.at) - from);
        }
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), count: samples.length };
}

export function printSoakReport(report: SoakReport): void {
  const lines = [
    `soak: ${report.created} sandboxes in ${report.durationSeconds.toFixed(1)} s (${report.throughputPerSecond.toFixed(1)} creates/s)`,
    `create->running: p50 ${report.createToRunningMs.p50} ms, p99 ${report.createToRunningMs.p99} ms over ${report.createToRunningMs.count}`,
    `final statuses: ${Object.entries(report.byStatus)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `faults injected: ${Object.entries(report.faults)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}; workers killed ${report.workerKills}, restarted ${report.workerRestarts} times`,
    'invariants:',
    ...report.invariants.map((i) => `  ${i.ok ? 'ok  ' : 'FAIL'} ${i.name}: ${i.detail}`),
  ];
  console.log(lines.join('\n'));
}
