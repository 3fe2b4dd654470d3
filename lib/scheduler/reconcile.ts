import { randomUUID } from 'node:crypto';
import type { Instance } from '../adapter/port.ts';
import { actors } from '../audit/chain.ts';
import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import type { WorkQueue } from '../queue/port.ts';
import { followBackendIdle, wentIdle } from '../sandboxes/idle.ts';
import { transitionSandbox } from '../sandboxes/transition.ts';
import { isSettledWithInstance, isTerminal } from '../schemas/sandbox-status.ts';
import type { AuditStore } from '../store/audit/port.ts';
import type { LeaseStore } from '../store/leases/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import type { WarmStore } from '../store/warm/port.ts';

const leaseName = 'reconcile';
const leaseSeconds = 300;
const system = actors.reconciler;

export interface ReconcileDeps {
  store: SandboxStore & AuditStore & LeaseStore & WarmStore;
  pools: PoolRegistry;
  queue: WorkQueue;
  config: Config;
  log: Log;
  now?: () => Date;
}

export interface PoolReconcileReport {
  pool: string;
  /** Why the pool was skipped this pass (its List failed, or it has no adapter); nothing was changed. */
  skipped?: string;
  listed: number;
  orphansDeleted: number;
  duplicatesDeleted: number;
  adopted: number;
  requeued: number;
  failed: number;
  stopped: number;
  /** Instances or sandboxes left alone because they changed within the grace period. */
  inGrace: number;
  /** Instances of the pool's warm instances (lib/warm/), not yet any sandbox's: left alone. */
  warm: number;
  /** Ready warm instances whose instance disappeared: their records removed, the next refill replaces them. */
  warmLost: number;
}

export interface ReconcileReport {
  /** False when another pass held the lease: this one did nothing. */
  ran: boolean;
  pools: PoolReconcileReport[];
  durationMs: number;
}

/**
 * One reconcile pass (adapter specification section 6), under a lease so two passes never overlap.
 * For every pool with an adapter it lists the installation's instances and: deletes orphans (unknown or
 * terminal sandbox, or left on this pool by a sandbox now on another), deletes a second instance of one
 * sandbox (E0.21), adopts instances of sandboxes stuck in provisioning, requeues stale provisioning with
 * no instance, fails sandboxes whose instance disappeared, and follows stopped and error states (and a
 * pause or stop of the backend's own idle timer, as idleness: lib/sandboxes/idle.ts). It never
 * deletes what it cannot prove orphaned: a pool whose List failed is skipped whole, and sandboxes
 * changed within the grace period are left alone.
 */
export async function reconcile(deps: ReconcileDeps): Promise<ReconcileReport> {
  const started = performance.now();
  const now = deps.now?.() ?? new Date();
  const owner = randomUUID();
  const until = new Date(now.getTime() + leaseSeconds * 1000).toISOString();
  if (!(await deps.store.acquireLease(leaseName, owner, until, now.toISOString()))) {
    return { ran: false, pools: [], durationMs: Math.round(performance.now() - started) };
  }
  try {
    // Pools added through the admin API since this container last looked are reconciled too.
    await deps.pools.sync(true);
    const installation = await deps.store.installation();
    const pools: PoolReconcileReport[] = [];
    for (const pool of deps.pools.list()) {
      pools.push(await reconcilePool(deps, pool.config.name, installation, now));
    }
    const report = { ran: true, pools, durationMs: Math.round(performance.now() - started) };
    deps.log.info('reconcile pass done', { ...report });
    return report;
  } finally {
    await deps.store.releaseLease(leaseName, owner);
  }
}

async function reconcilePool(
  deps: ReconcileDeps,
  pool: string,
  installation: string,
  now: Date,
): Promise<PoolReconcileReport> {
  const report: PoolReconcileReport = {
    pool,
    listed: 0,
    orphansDeleted: 0,
    duplicatesDeleted: 0,
    adopted: 0,
    requeued: 0,
    failed: 0,
    stopped: 0,
    inGrace: 0,
    warm: 0,
    warmLost: 0,
  };
  const adapter = deps.pools.get(pool)?.adapter;
  if (adapter === undefined) return { ...report, skipped: 'no adapter for this pool in this build' };
  let instances: Instance[];
  try {
    instances = await adapter.list(installation, { signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    deps.log.warn('reconcile: List failed; pool skipped this pass', { pool, error: describeError(error) });
    return { ...report, skipped: `List failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  report.listed = instances.length;
  const [live, warmRecords] = await Promise.all([allLiveOnPool(deps.store, pool), deps.store.listWarm(pool)]);
  const warm = new Map(warmRecords.map((record) => [record.id, record]));
  const graceStart = now.getTime() - deps.config.scheduler.reconcileGraceSeconds * 1000;
  const inGrace = (record: SandboxRecord) => Date.parse(record.updatedAt) > graceStart;
  const staleProvisioning = (record: SandboxRecord) =>
    Date.parse(record.updatedAt) < now.getTime() - deps.config.scheduler.provisionTimeoutSeconds * 1000;
  const listedRefs = new Set(instances.map((instance) => instance.ref));
  const act = async (what: string, record: SandboxRecord | undefined, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      // Changed under us, or a call failed: the next pass looks again.
      if (!(isApiError(error) && error.code === 'conflict')) {
        deps.log.warn(`reconcile: ${what} failed`, {
          pool,
          sandboxId: record?.id,
          error: describeError(error),
        });
      }
      return false;
    }
    return true;
  };
  const remove = (ref: string) => adapter.delete(ref, { signal: AbortSignal.timeout(60_000) });

  // Instances: orphans, leftovers, duplicates, adoption.
  for (const instance of instances) {
    // Unnamed (the backend cannot say whose it is without waking it): a live sandbox holding its ref needs
    // nothing here, and one that nobody holds may be another installation's or a create still under way.
    // Left alone; the backend's own lifetime bounds it. Its ref still counts as listed below.
    if (instance.sandboxId === '') continue;
    // A warm instance belongs to the installation until a claim makes it a sandbox: its Create may still be
    // under way (no ref yet), and a second instance of one record is a duplicate like a sandbox's.
    const ahead = warm.get(instance.sandboxId);
    if (ahead !== undefined && (ahead.backendRef === null || ahead.backendRef === instance.ref)) {
      report.warm++;
      continue;
    }
    if (ahead !== undefined) {
      if (await act('warm duplicate delete', undefined, () => remove(instance.ref)))
        report.duplicatesDeleted++;
      continue;
    }
    const sandbox = live.get(instance.sandboxId) ?? (await deps.store.findSandbox(instance.sandboxId));
    if (sandbox !== undefined && inGrace(sandbox) && !isTerminal(sandbox.status)) {
      report.inGrace++;
      continue;
    }
    if (sandbox === undefined || isTerminal(sandbox.status)) {
      if (await act('orphan delete', sandbox, () => remove(instance.ref))) report.orphansDeleted++;
      continue;
    }
    if (sandbox.pool !== pool) {
      // Another pool's sandbox. Its current instance (two pools on one backend) is left alone; a leftover
      // from an earlier placement goes, unless the sandbox is still being placed.
      if (
        sandbox.backendRef === instance.ref ||
        sandbox.status === 'queued' ||
        sandbox.status === 'provisioning'
      ) {
        continue;
      }
      if (await act('leftover delete', sandbox, () => remove(instance.ref))) report.orphansDeleted++;
      continue;
    }
    if (sandbox.backendRef !== null && sandbox.backendRef !== instance.ref) {
      if (await act('duplicate delete', sandbox, () => remove(instance.ref))) report.duplicatesDeleted++;
      continue;
    }
    if (sandbox.status === 'provisioning' && staleProvisioning(sandbox) && instance.state !== 'error') {
      const adopted = await act('adopt', sandbox, async () => {
        await transitionSandbox(
          deps.store,
          sandbox,
          'running',
          {
            backendRef: instance.ref,
            statusMessage: 'adopted by the reconciler after an interrupted provisioning',
            expiresAt: new Date(now.getTime() + sandbox.ttlSeconds * 1000).toISOString(),
          },
          { now, actor: system, cause: 'reconciler' },
        );
      });
      if (adopted) report.adopted++;
    }
  }

  // Warm instances whose instance is gone (changed before the grace period, so it was listed if it lived).
  for (const record of warm.values()) {
    if (record.status !== 'ready' || record.backendRef === null || listedRefs.has(record.backendRef))
      continue;
    if (Date.parse(record.updatedAt) > graceStart) continue;
    if (await deps.store.removeWarm(record)) report.warmLost++;
  }

  // Sandboxes: stale provisioning with no instance, disappeared instances, state to follow.
  const bySandbox = new Map(instances.map((instance) => [instance.sandboxId, instance]));
  for (const sandbox of live.values()) {
    if (inGrace(sandbox)) {
      report.inGrace++;
      continue;
    }
    const instance = bySandbox.get(sandbox.id);
    if (sandbox.status === 'provisioning' && instance === undefined && staleProvisioning(sandbox)) {
      const requeued = await act('requeue', sandbox, async () => {
        const queued = await transitionSandbox(
          deps.store,
          sandbox,
          'queued',
          { statusMessage: 'requeued by the reconciler: provisioning stalled with no instance' },
          { now, actor: system, cause: 'reconciler' },
        );
        await deps.queue.send('provision', { sandboxId: queued.id, orgId: queued.orgId });
      });
      if (requeued) report.requeued++;
      continue;
    }
    const holds = isSettledWithInstance(sandbox.status);
    if (!holds || sandbox.backendRef === null) continue;
    if (!listedRefs.has(sandbox.backendRef)) {
      const failed = await act('fail disappeared', sandbox, async () => {
        await transitionSandbox(
          deps.store,
          sandbox,
          'failed',
          { statusMessage: 'backend instance disappeared' },
          { now, actor: system, cause: 'reconciler' },
        );
      });
      if (failed) report.failed++;
      continue;
    }
    const current = instances.find((i) => i.ref === sandbox.backendRef);
    if (current?.state === 'error') {
      const failed = await act('fail error', sandbox, async () => {
        await transitionSandbox(
          deps.store,
          sandbox,
          'failed',
          { statusMessage: `the backend reports an error: ${current.message ?? 'no message'}` },
          { now, actor: system, cause: 'reconciler' },
        );
      });
      if (failed) report.failed++;
    } else if (
      (current?.state === 'stopped' || current?.state === 'paused') &&
      sandbox.status === 'running' &&
      sandbox.idle?.enforcedBy === 'backend' &&
      wentIdle(sandbox, sandbox.idle, await deps.store.lastActivity(sandbox.orgId, sandbox.id), now)
    ) {
      // The backend's own idle timer paused or stopped it: followed as idleness, resumed on the next call.
      const idle = sandbox.idle;
      const state = current.state;
      const followed = await act('follow idle', sandbox, async () => {
        await followBackendIdle(deps.store, sandbox, idle, state, now);
      });
      if (followed) report.stopped++;
    } else if (
      current?.state === 'stopped' &&
      (sandbox.status === 'running' || sandbox.status === 'paused')
    ) {
      const stopped = await act('follow stopped', sandbox, async () => {
        await transitionSandbox(
          deps.store,
          sandbox,
          'stopped',
          { statusMessage: 'stopped on the backend' },
          { now, actor: system, cause: 'reconciler' },
        );
      });
      if (stopped) report.stopped++;
    }
  }
  return report;
}

async function allLiveOnPool(
  store: SandboxStore & AuditStore & LeaseStore,
  pool: string,
): Promise<Map<string, SandboxRecord>> {
  const live = new Map<string, SandboxRecord>();
  let cursor: string | undefined;
  do {
    const page = await store.listSandboxesByPool(pool, { cursor, limit: 100 });
    for (const record of page.items) live.set(record.id, record);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return live;
}
