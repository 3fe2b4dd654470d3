import { ownershipLabels } from '../adapter/ownership.ts';
import { actors } from '../audit/chain.ts';
import { reservationFor } from '../budgets/billing.ts';
import { billable, ratesOf } from '../budgets/prices.ts';
import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import { rankPools } from '../placement/rank.ts';
import type { Pool, PoolRegistry } from '../pools/registry.ts';
import { done, retryAfter, type WorkOutcome } from '../queue/outcome.ts';
import type { WorkMessage, WorkQueue } from '../queue/port.ts';
import { neverFits } from '../quotas/usage.ts';
import { idleKeptByBackend } from '../sandboxes/idle.ts';
import { transitionSandbox } from '../sandboxes/transition.ts';
import type { WaitReason } from '../schemas/sandbox-status.ts';
import type { AuditStore } from '../store/audit/port.ts';
import type { PoolStore } from '../store/pools/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxPatch, SandboxStore } from '../store/sandboxes/port.ts';
import type { SnapshotStore } from '../store/snapshots/port.ts';
import type { TenancyStore } from '../store/tenancy/port.ts';
import { provisionBackoffSeconds, waitSeconds } from './backoff.ts';
import { noteProgress } from './heartbeat.ts';
import { startIdleClock } from './idle-check.ts';

export interface ProvisionDeps {
  store: TenancyStore & PoolStore & SandboxStore & SnapshotStore & AuditStore;
  pools: PoolRegistry;
  queue: WorkQueue;
  config: Config;
  log: Log;
  now?: () => Date;
}

const system = actors.system;

/**
 * Handles one provision message. The record is the truth: a message for a sandbox that is no longer
 * queued or provisioning is a duplicate or stale delivery and is acknowledged. A record left in
 * provisioning by a crashed worker is picked up again here, on the same pool first, and Create's
 * idempotency on the sandbox id keeps it to one instance.
 */
export async function provisionSandbox(
  deps: ProvisionDeps,
  message: WorkMessage,
  receiveCount = 1,
): Promise<WorkOutcome> {
  try {
    const outcome = await provisionOnce(deps, message, receiveCount);
    // A wake that found no room yet is done: the sandbox's own waiting message keeps its place.
    return message.wake === true && outcome.kind === 'retry' ? done : outcome;
  } catch (error) {
    // Another writer changed the record between our read and write: look again shortly.
    if (isApiError(error) && error.code === 'conflict') return retryAfter(1);
    throw error;
  }
}

async function provisionOnce(
  deps: ProvisionDeps,
  message: WorkMessage,
  receiveCount: number,
): Promise<WorkOutcome> {
  const now = () => deps.now?.() ?? new Date();
  // The sandbox and the pools' version in one round trip: the pools are read again only if they changed.
  const read = await deps.store.readAlong({
    orgId: message.orgId,
    sandboxId: message.sandboxId,
    poolsVersion: true,
  });
  const record = read.sandbox ?? undefined;
  if (record === undefined) {
    deps.log.warn('provision message for an unknown sandbox; acknowledged', { ...message });
    return done;
  }
  if (record.status !== 'queued' && record.status !== 'provisioning') {
    deps.log.info('provision message for a sandbox past provisioning; acknowledged', {
      ...message,
      status: record.status,
    });
    return done;
  }
  if (queueDeadlinePassed(record, now())) {
    await transitionSandbox(
      deps.store,
      record,
      'failed',
      { statusMessage: `queue timeout: not placed within ${record.queueTimeoutSeconds} s` },
      { now: now(), actor: system },
    );
    return done;
  }

  // Placement on current pools, views (health, down marks) and policy, whichever container this is.
  await deps.pools.syncTo(read.poolsVersion ?? null);
  const ranked = await rankPools(record, deps, now().getTime(), { synced: true });
  // A sandbox already provisioning on a pool keeps that pool first: its Create may have succeeded.
  const candidates =
    record.status === 'provisioning' && record.pool !== null
      ? [...ranked.candidates].sort(
          (a, b) => Number(b.config.name === record.pool) - Number(a.config.name === record.pool),
        )
      : ranked.candidates;
  const rejected = ranked.placement.rejected.map(({ pool, reason }) => ({ pool, reason }));
  const verdict = ranked.placement.verdict;
  if (verdict.kind === 'unsupported' || verdict.kind === 'never') {
    // Pools or the policy changed since admission so that this sandbox can never run: say why, once.
    await transitionSandbox(
      deps.store,
      record,
      'failed',
      {
        statusMessage: verdict.message,
        placement: { pool: null, rejected, decidedAt: now().toISOString() },
      },
      { now: now(), actor: system },
    );
    return done;
  }
  if (verdict.kind === 'wait') {
    const words = verdict.waitingFor === 'capacity' ? 'waiting for capacity' : 'waiting for a pool';
    await wait(deps, record, verdict.waitingFor, `${words}: ${verdict.message}`);
    return retryAfter(waitSeconds(receiveCount));
  }

  let current = record;
  for (const pool of candidates) {
    const activation = await activate(deps, current, pool, rejected, now());
    if (activation.kind === 'quota') {
      // The quota may have been lowered below this sandbox since admission: then waiting is forever.
      const org = await deps.store.getOrg(record.orgId);
      const never =
        activation.neverAffordable ??
        (org === undefined ? undefined : neverFits(record.resources, org.quota));
      if (never !== undefined) {
        await transitionSandbox(
          deps.store,
          activation.record,
          'failed',
          { statusMessage: `this sandbox can never run: ${never}` },
          {
            now: now(),
            actor: system,
            cause: activation.neverAffordable !== undefined ? 'budget' : undefined,
          },
        );
        return done;
      }
      await wait(deps, activation.record, 'quota', `waiting for quota: ${activation.reason}`);
      return retryAfter(waitSeconds(receiveCount));
    }
    if (activation.kind === 'pool-full') {
      rejected.push({ pool: pool.config.name, reason: activation.reason });
      current = activation.record;
      continue;
    }
    current = activation.record;
    const outcome = await createOn(deps, current, pool, now);
    if (outcome.kind === 'next-pool') {
      rejected.push({ pool: pool.config.name, reason: outcome.reason });
      current = outcome.record;
      continue;
    }
    return outcome.result;
  }
  await wait(deps, current, 'capacity', `waiting for capacity: ${describe(rejected)}`);
  return retryAfter(waitSeconds(receiveCount));
}

type Activation =
  | { kind: 'active'; record: SandboxRecord }
  | {
      kind: 'quota' | 'pool-full';
      record: SandboxRecord;
      reason: string;
      /** Set when the refusal was a budget now smaller than this sandbox's whole reservation. */
      neverAffordable?: string;
    };

/**
 * Puts the sandbox in provisioning on `pool`: its quota and the pool's concurrency slot are reserved in
 * the same write (or moved from the pool it was provisioning on before).
 */
async function activate(
  deps: ProvisionDeps,
  record: SandboxRecord,
  pool: Pool,
  rejected: { pool: string; reason: string }[],
  now: Date,
): Promise<Activation> {
  const name = pool.config.name;
  const patch: SandboxPatch = {
    pool: name,
    placement: { pool: name, rejected: [...rejected], decidedAt: now.toISOString() },
    statusMessage: `provisioning on ${name}`,
    // Its most cost on this pool's prices, held of the org's (and project's) budget in the same write;
    // on a pool with no prices there is nothing to hold or bill (and the record stays its old size).
    billing: billable(pool.config.prices)
      ? reservationFor(ratesOf(pool.config.prices, record.resources), record.ttlSeconds, now)
      : null,
  };
  const options = { now, actor: system, poolLimit: pool.config.maxConcurrency };
  try {
    if (record.status === 'provisioning' && record.pool === name) return { kind: 'active', record };
    // provisioning on another pool: release that pool's slot first, then take this one's.
    const from =
      record.status === 'provisioning' ? await requeue(deps, record, record.statusMessage ?? '') : record;
    return {
      kind: 'active',
      record: await transitionSandbox(deps.store, from, 'provisioning', patch, options),
    };
  } catch (error) {
    if (!isApiError(error)) throw error;
    const latest = (await deps.store.getSandbox(record.orgId, record.id)) ?? record;
    if (error.code === 'quota_exceeded') {
      const { field, limit, requested, scope } = error.details;
      const neverAffordable =
        field === 'budget' && typeof limit === 'number' && typeof requested === 'number' && requested > limit
          ? `its maximum cost of ${requested} is more than the ${String(scope)}'s monthly budget of ${limit}`
          : undefined;
      return {
        kind: 'quota',
        record: latest,
        reason: error.message,
        ...(neverAffordable !== undefined && { neverAffordable }),
      };
    }
    if (error.code === 'insufficient_capacity')
      return { kind: 'pool-full', record: latest, reason: error.message };
    throw error;
  }
}

type CreateOutcome =
  | { kind: 'result'; result: WorkOutcome }
  | { kind: 'next-pool'; record: SandboxRecord; reason: string };

async function createOn(
  deps: ProvisionDeps,
  record: SandboxRecord,
  pool: Pool,
  now: () => Date,
): Promise<CreateOutcome> {
  const name = pool.config.name;
  const adapter = deps.pools.adapterOf(name);
  const context = { sandboxId: record.id, orgId: record.orgId, pool: name, attempt: record.attempts + 1 };
  const installation = await deps.store.installation();
  // A restore names our snapshot id; the backend needs its own ref for it.
  let fromSnapshot: string | undefined;
  if (record.fromSnapshot !== null) {
    const snapshot = await deps.store.getSnapshot(record.orgId, record.fromSnapshot);
    if (snapshot === undefined) {
      await transitionSandbox(
        deps.store,
        record,
        'failed',
        {
          statusMessage: `snapshot ${record.fromSnapshot} was deleted before the sandbox could be restored from it`,
        },
        { now: now(), actor: system },
      );
      return { kind: 'result', result: done };
    }
    if (snapshot.status === 'failed') {
      await transitionSandbox(
        deps.store,
        record,
        'failed',
        { statusMessage: `snapshot ${snapshot.id} failed: ${snapshot.statusMessage ?? 'no reason given'}` },
        { now: now(), actor: system },
      );
      return { kind: 'result', result: done };
    }
    if (snapshot.status === 'creating') {
      // A fork's child waits for its snapshot (uncounted), giving its reservation back meanwhile.
      await wait(deps, record, 'snapshot', `waiting for snapshot ${snapshot.id} to be ready`);
      return { kind: 'result', result: retryAfter(2) };
    }
    fromSnapshot = snapshot.backendRef;
  }
  let ref: string;
  // A backend that keeps the idle policy itself is created with it; the control plane then follows it.
  const idle = idleKeptByBackend(record.idle, adapter, deps.pools.featuresOf(name));
  const timeoutMs = deps.config.scheduler.provisionTimeoutSeconds * 1000;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const instance = await adapter.create(
      {
        id: record.id,
        installation,
        ...(record.template !== null && { template: record.template }),
        resources: record.resources,
        env: record.env,
        labels: ownershipLabels(record.id, installation, {
          ...record.labels,
          'differently.dev/org': record.orgId,
          ...(record.projectId !== null && { 'differently.dev/project': record.projectId }),
        }),
        ttlSeconds: record.ttlSeconds,
        ...(fromSnapshot !== undefined && { fromSnapshot }),
        ...(idle !== undefined && { idle }),
        ...(record.network !== null && { network: record.network }),
      },
      // The adapter's own waits end a few seconds before the scheduler gives up on the call.
      { signal, deadline: Date.now() + timeoutMs - Math.min(5000, timeoutMs / 10) },
    );
    ref = instance.ref;
  } catch (error) {
    // Our own timeout is not the backend being down: the attempt is counted, the pool stays healthy.
    const code = signal.aborted ? 'sandbox_failed' : isApiError(error) ? error.code : 'internal';
    const reason = error instanceof Error ? error.message : String(error);
    deps.log.warn('adapter create failed', { ...context, code, error: describeError(error) });
    switch (code) {
      case 'insufficient_capacity': {
        // Give the slot back before trying the next pool; the attempt is not counted.
        const released = await requeue(deps, record, `insufficient capacity on ${name}: ${reason}`);
        return { kind: 'next-pool', record: released, reason: `insufficient capacity: ${reason}` };
      }
      case 'invalid_request':
        await transitionSandbox(
          deps.store,
          record,
          'failed',
          { statusMessage: `the backend refused the request: ${reason}` },
          { now: now(), actor: system },
        );
        return { kind: 'result', result: done };
      case 'sandbox_failed':
        return {
          kind: 'result',
          result: await countAttempt(deps, record, `sandbox failed on ${name}: ${reason}`),
        };
      default:
        // provider_unavailable and anything unexpected: the pool is down, for every container, until a
        // probe started after this succeeds.
        await deps.pools.markDown(name, reason);
        return {
          kind: 'result',
          result: await countAttempt(deps, record, `pool ${name} unavailable: ${reason}`),
        };
    }
  }
  // Outside the try: a failed write here is the store's, not the backend's. It propagates, the record
  // stays provisioning with its reservation, and the redelivered message reuses the instance.
  await markRunning(deps, record, ref, now(), idle !== undefined);
  deps.log.info('sandbox running', { ...context, backendRef: ref });
  return { kind: 'result', result: done };
}

function queueDeadlinePassed(record: SandboxRecord, now: Date): boolean {
  if (record.queueTimeoutSeconds === null) return false;
  return now.getTime() - Date.parse(record.createdAt) > record.queueTimeoutSeconds * 1000;
}

async function markRunning(
  deps: ProvisionDeps,
  record: SandboxRecord,
  backendRef: string,
  now: Date,
  idleOnBackend: boolean,
) {
  try {
    const running = await transitionSandbox(
      deps.store,
      record,
      'running',
      {
        backendRef,
        statusMessage: null,
        expiresAt: new Date(now.getTime() + record.ttlSeconds * 1000).toISOString(),
        ...(record.idle !== null && {
          idle: {
            ...record.idle,
            idledAt: null,
            runningSince: now.toISOString(),
            enforcedBy: idleOnBackend ? 'backend' : 'control-plane',
          },
        }),
      },
      { now, actor: system },
    );
    await startIdleClock(deps, running, now);
  } catch (error) {
    if (!isApiError(error) || error.code !== 'conflict') throw error;
    // The sandbox changed while Create ran (most often: deleted). Hand the instance to termination.
    const latest = await deps.store.getSandbox(record.orgId, record.id);
    if (latest?.status === 'terminating' && latest.backendRef === null) {
      await deps.store.updateSandbox(latest, { backendRef, pool: record.pool });
      return;
    }
    throw error;
  }
}

async function countAttempt(
  deps: ProvisionDeps,
  record: SandboxRecord,
  reason: string,
): Promise<WorkOutcome> {
  const attempts = record.attempts + 1;
  const { maxAttempts } = deps.config.scheduler;
  if (attempts >= maxAttempts) {
    await transitionSandbox(
      deps.store,
      record,
      'failed',
      { statusMessage: `${reason} (gave up after ${attempts} attempts)`, attempts },
      { now: deps.now?.() ?? new Date(), actor: system, cause: 'backend' },
    );
    return done;
  }
  await requeue(deps, record, `${reason}; retrying (attempt ${attempts} of ${maxAttempts})`, attempts);
  return retryAfter(provisionBackoffSeconds(attempts));
}

/** Back to queued: the reservation returns to the org and the pool in the same write. */
async function requeue(
  deps: ProvisionDeps,
  record: SandboxRecord,
  reason: string,
  attempts = record.attempts,
  waitingFor: WaitReason | null = null,
): Promise<SandboxRecord> {
  return transitionSandbox(
    deps.store,
    record,
    'queued',
    { statusMessage: reason, attempts, waitingFor },
    { now: deps.now?.() ?? new Date(), actor: system },
  );
}

/**
 * Records why a queued sandbox waits, typed (`waitingFor`, what the wake-ups read) and in words (a
 * heartbeat for the sweep); a provisioning one goes back to queued.
 */
async function wait(
  deps: ProvisionDeps,
  record: SandboxRecord,
  waitingFor: WaitReason,
  reason: string,
): Promise<void> {
  if (record.status === 'provisioning') {
    await requeue(deps, record, reason, record.attempts, waitingFor);
    return;
  }
  await noteProgress(deps.store, record, reason, deps.now?.() ?? new Date(), { waitingFor });
}

function describe(rejected: { pool: string; reason: string }[]): string {
  return rejected.map((r) => `${r.pool}: ${r.reason}`).join('; ');
}
