import { randomUUID } from 'node:crypto';
import { ownershipLabels } from '../adapter/ownership.ts';
import { fromMicros, ratesOf } from '../budgets/prices.ts';
import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { newId } from '../ids.ts';
import { describeError, type Log } from '../log.ts';
import type { WarmTarget } from '../schemas/warm-targets.ts';
import type { AuditStore } from '../store/audit/port.ts';
import type { LeaseStore } from '../store/leases/port.ts';
import type { WarmRecord } from '../store/records.ts';
import type { WarmStore } from '../store/warm/port.ts';
import type { WarmPool, WarmPools } from './pools.ts';
import { shapeKey, targetShape, type WarmShape } from './shape.ts';
import { sizeNow } from './targets.ts';

export interface WarmRefillDeps {
  store: WarmStore & LeaseStore & Pick<AuditStore, 'installation'>;
  pools: WarmPools;
  config: Config;
  log: Log;
  now?: () => Date;
}

/** What one refill did on one target of a pool. */
export interface WarmTargetReport {
  pool: string;
  shape: string;
  template: string | null;
  size: number;
  ready: number;
  provisioning: number;
  created: number;
  failed: number;
  retired: number;
  /** Why fewer were created than missing: the pool's capacity, the cost cap, an unhealthy pool. */
  held?: string;
}

export interface WarmRefillReport {
  ran: boolean;
  targets: WarmTargetReport[];
  /** What all warm instances cost per hour at their pools' running prices, after this pass. */
  hourlyCost: number;
}

const leaseName = 'warm-refill';
/** At most this many Creates run at once in one pass: a large target fills over a few passes, never a flood. */
const createsAtOnce = 10;

/** The hourly cost of one instance of `shape` on `pool`, at the pool's running prices. */
function hourlyCostOf(pool: WarmPool, shape: WarmShape): number {
  return fromMicros(ratesOf(pool.config.prices, shape.resources).running * 3600);
}

/**
 * One refill pass (run after each pool-refresh, under a lease so passes never overlap): for each target
 * of each pool, retire what is no longer wanted (a target removed or out of its window, instances past
 * their maximum age, surplus, Creates that never finished) and create what is missing, within the pool's
 * maxConcurrency (a warm instance holds a slot like a sandbox) and the installation's cost cap
 * (config warm.maxHourlyCost). Instances are recorded before their Create, so a crash leaves a record
 * the next pass retires and the reconciler a labelled instance it can match.
 */
export async function refillWarmPools(deps: WarmRefillDeps, budgetMs = 50_000): Promise<WarmRefillReport> {
  const now = deps.now?.() ?? new Date();
  const owner = randomUUID();
  const until = new Date(now.getTime() + deps.config.scheduler.provisionTimeoutSeconds * 1000 + 60_000);
  if (!(await deps.store.acquireLease(leaseName, owner, until.toISOString(), now.toISOString()))) {
    return { ran: false, targets: [], hourlyCost: 0 };
  }
  try {
    // Targets changed through the admin API since this container last looked count in this very pass.
    await deps.pools.sync(true);
    const installation = await deps.store.installation();
    const deadline = Date.now() + budgetMs;
    const cap = deps.config.warm.maxHourlyCost;
    const pools = deps.pools.list().filter((pool) => (pool.config.warm ?? []).length > 0);
    const warmOf = new Map<string, WarmRecord[]>();
    for (const pool of deps.pools.list())
      warmOf.set(pool.config.name, await deps.store.listWarm(pool.config.name));
    // Retire first, across every pool, so the cost cap counts only what stays.
    const reports: WarmTargetReport[] = [];
    for (const [name, records] of warmOf) {
      const pool = deps.pools.get(name);
      const kept = await retireUnwanted(deps, pool, records, now);
      warmOf.set(name, kept.kept);
      for (const report of kept.reports) reports.push(report);
    }
    let hourlyCost = 0;
    for (const [name, records] of warmOf) {
      const pool = deps.pools.get(name);
      if (pool === undefined) continue;
      for (const record of records) hourlyCost += hourlyCostOf(pool, record);
    }
    for (const pool of pools) {
      const name = pool.config.name;
      for (const target of pool.config.warm ?? []) {
        const shape = targetShape(target, deps.config);
        const key = shapeKey(shape);
        const report = reportFor(reports, name, key, target, now);
        const records = (warmOf.get(name) ?? []).filter((record) => record.shape === key);
        report.ready = records.filter((record) => record.status === 'ready').length;
        report.provisioning = records.length - report.ready;
        let missing = report.size - records.length;
        if (missing <= 0) continue;
        if (!deps.pools.isHealthy(name) || pool.adapter === undefined) {
          report.held = 'the pool is unhealthy';
          continue;
        }
        const each = hourlyCostOf(pool, shape);
        if (cap !== undefined && each > 0) {
          const affordable = Math.max(0, Math.floor((cap - hourlyCost) / each + 1e-9));
          if (affordable < missing) {
            report.held = `the cost cap of ${cap} per hour (warm instances cost ${round(hourlyCost)} now)`;
            missing = affordable;
          }
        }
        const made = await createInstances(deps, pool, shape, key, missing, installation, deadline, report);
        hourlyCost += made * each;
      }
    }
    const result = { ran: true, targets: reports, hourlyCost: round(hourlyCost) };
    if (reports.some((report) => report.created + report.retired + report.failed > 0)) {
      deps.log.info('warm refill', { ...result });
    }
    return result;
  } finally {
    await deps.store.releaseLease(leaseName, owner);
  }
}

function round(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}

function reportFor(
  reports: WarmTargetReport[],
  pool: string,
  shape: string,
  target: WarmTarget,
  now: Date,
): WarmTargetReport {
  let report = reports.find((entry) => entry.pool === pool && entry.shape === shape);
  if (report === undefined) {
    report = blank(pool, shape, target.template ?? null);
    reports.push(report);
  }
  report.size = sizeNow(target, now);
  return report;
}

function blank(pool: string, shape: string, template: string | null): WarmTargetReport {
  return { pool, shape, template, size: 0, ready: 0, provisioning: 0, created: 0, failed: 0, retired: 0 };
}

/**
 * Retires a pool's warm instances that are not wanted now: of no current target (or a pool gone), past
 * their target's maximum age, a Create older than the provision timeout, or beyond the target's size
 * (the oldest go first). Each one's record is removed first, so no claim can take it while it goes.
 */
async function retireUnwanted(
  deps: WarmRefillDeps,
  pool: WarmPool | undefined,
  records: WarmRecord[],
  now: Date,
): Promise<{ kept: WarmRecord[]; reports: WarmTargetReport[] }> {
  const reports: WarmTargetReport[] = [];
  const kept: WarmRecord[] = [];
  const targets = new Map(
    (pool?.config.warm ?? []).map((target) => [shapeKey(targetShape(target, deps.config)), target] as const),
  );
  const stale = now.getTime() - deps.config.scheduler.provisionTimeoutSeconds * 1000;
  const byShape = new Map<string, WarmRecord[]>();
  for (const record of records) byShape.set(record.shape, [...(byShape.get(record.shape) ?? []), record]);
  for (const [shape, group] of byShape) {
    const target = targets.get(shape);
    const report = blank(group[0]?.pool ?? '', shape, group[0]?.template ?? null);
    reports.push(report);
    const size = target === undefined ? 0 : sizeNow(target, now);
    const maxAgeMs = (target?.maxAgeSeconds ?? 0) * 1000;
    // Ready ones first, the youngest first: what is kept is what a claim would want.
    const ordered = [...group].sort(
      (a, b) =>
        Number(b.status === 'ready') - Number(a.status === 'ready') || (a.createdAt < b.createdAt ? 1 : -1),
    );
    for (const record of ordered) {
      const tooOld = now.getTime() - Date.parse(record.createdAt) >= maxAgeMs;
      const stuck = record.status === 'provisioning' && Date.parse(record.updatedAt) < stale;
      if (!tooOld && !stuck && kept.filter((k) => k.shape === shape).length < size) {
        kept.push(record);
        continue;
      }
      if (await retire(deps, pool, record)) report.retired++;
    }
  }
  return { kept, reports };
}

/** Removes a warm instance's record (if it is still as read: not claimed meanwhile), then its instance. */
export async function retire(
  deps: { store: WarmStore; log: Log },
  pool: WarmPool | undefined,
  record: WarmRecord,
): Promise<boolean> {
  if (!(await deps.store.removeWarm(record))) return false;
  if (record.backendRef !== null && pool?.adapter !== undefined) {
    await pool.adapter
      .delete(record.backendRef, { signal: AbortSignal.timeout(30_000) })
      .catch((error: unknown) =>
        deps.log.warn('warm instance delete failed; the reconciler deletes it', {
          pool: record.pool,
          instance: record.id,
          error: describeError(error),
        }),
      );
  }
  return true;
}

/**
 * Creates `count` instances of a target, a few at once. Each is recorded (provisioning, taking a slot of
 * the pool) before its Create and marked ready after it; a pool at its maxConcurrency stops the pass.
 * An instance is made for no tenant: no env, no tenant labels, no backend lifetime (refill retires it).
 */
async function createInstances(
  deps: WarmRefillDeps,
  pool: WarmPool,
  shape: WarmShape,
  key: string,
  count: number,
  installation: string,
  deadline: number,
  report: WarmTargetReport,
): Promise<number> {
  const name = pool.config.name;
  const adapter = pool.adapter;
  if (adapter === undefined) return 0;
  let made = 0;
  let next = 0;
  let full = false;
  const one = async (): Promise<void> => {
    const at = (deps.now?.() ?? new Date()).toISOString();
    const record: WarmRecord = {
      id: newId('sandbox'),
      pool: name,
      shape: key,
      template: shape.template,
      resources: shape.resources,
      network: shape.network,
      status: 'provisioning',
      backendRef: null,
      version: 1,
      createdAt: at,
      readyAt: null,
      updatedAt: at,
    };
    try {
      await deps.store.putWarm(record, { poolLimit: pool.config.maxConcurrency });
    } catch (error) {
      if (isApiError(error) && error.code === 'insufficient_capacity') {
        full = true;
        report.held = `pool ${name} is at its maxConcurrency of ${pool.config.maxConcurrency}`;
        return;
      }
      throw error;
    }
    const timeoutMs = Math.max(
      1000,
      Math.min(deps.config.scheduler.provisionTimeoutSeconds * 1000, deadline - Date.now()),
    );
    try {
      const instance = await adapter.create(
        {
          id: record.id,
          installation,
          ...(shape.template !== null && { template: shape.template }),
          resources: shape.resources,
          env: {},
          labels: ownershipLabels(record.id, installation, { 'differently.dev/warm': name }),
          ...(shape.network !== null && { network: shape.network }),
        },
        {
          signal: AbortSignal.timeout(timeoutMs),
          deadline: Date.now() + timeoutMs - Math.min(5000, timeoutMs / 10),
        },
      );
      const readyAt = (deps.now?.() ?? new Date()).toISOString();
      await deps.store.updateWarm(record, {
        status: 'ready',
        backendRef: instance.ref,
        readyAt,
        updatedAt: readyAt,
      });
      made++;
      report.created++;
      report.ready++;
    } catch (error) {
      report.failed++;
      deps.log.warn('warm instance create failed', {
        pool: name,
        instance: record.id,
        error: describeError(error),
      });
      // Its record goes (the slot with it); an instance the backend made anyway is the reconciler's orphan.
      await deps.store.removeWarm(record).catch(() => false);
    }
  };
  const worker = async () => {
    while (!full && next < count && Date.now() < deadline) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: Math.min(createsAtOnce, count) }, worker));
  return made;
}
