import type { Config } from '../config.ts';
import { isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { PoolRegistry } from '../pools.ts';
import type { WorkMessage } from '../queue/port.ts';
import { transitionSandbox } from '../sandbox-records.ts';
import type { Store } from '../store/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import { capacityRetrySeconds, provisionBackoffSeconds } from './backoff.ts';
import { done, retryAfter, type WorkOutcome } from './outcome.ts';
import { rankPools } from './placement.ts';

export interface ProvisionDeps {
  store: Store;
  pools: PoolRegistry;
  config: Config;
  log: Log;
  now?: () => Date;
}

/** How long a pool stays unhealthy after a provider_unavailable, until pool-refresh probes it again. */
const unhealthyForMs = 30_000;

/**
 * Handles one provision message. The record is the truth: a message for a sandbox that is no longer
 * queued or provisioning is a duplicate or stale delivery and is acknowledged. A record left in
 * provisioning by a crashed worker is picked up again here, and Create's idempotency on the sandbox id
 * keeps it to one instance.
 */
export async function provisionSandbox(deps: ProvisionDeps, message: WorkMessage): Promise<WorkOutcome> {
  try {
    return await provisionOnce(deps, message);
  } catch (error) {
    // Another writer changed the record between our read and write: look again shortly.
    if (isApiError(error) && error.code === 'conflict') return retryAfter(1);
    throw error;
  }
}

async function provisionOnce(deps: ProvisionDeps, message: WorkMessage): Promise<WorkOutcome> {
  const now = deps.now ?? (() => new Date());
  const log = deps.log;
  const record = await deps.store.getSandbox(message.sandboxId);
  if (record === undefined || record.orgId !== message.orgId) {
    log.warn('provision message for an unknown sandbox; acknowledged', { ...message });
    return done;
  }
  if (record.status !== 'queued' && record.status !== 'provisioning') {
    log.info('provision message for a sandbox past provisioning; acknowledged', {
      ...message,
      status: record.status,
    });
    return done;
  }
  if (queueDeadlinePassed(record, now())) {
    await fail(deps, record, `queue timeout: not placed within ${record.queueTimeoutSeconds} s`);
    return done;
  }

  const ranked = rankPools(record, deps.pools, now().getTime());
  // A sandbox already provisioning on a pool keeps that pool first: its Create may have succeeded.
  const candidates =
    record.status === 'provisioning' && record.pool !== null
      ? [...ranked.candidates].sort(
          (a, b) => Number(b.config.name === record.pool) - Number(a.config.name === record.pool),
        )
      : ranked.candidates;
  if (candidates.length === 0) {
    const reason = ranked.rejected.map((r) => `${r.pool}: ${r.reason}`).join('; ') || 'no pool is permitted';
    if (
      ranked.rejected.every((r) => r.reason.startsWith('missing capabilities')) &&
      ranked.rejected.length > 0
    ) {
      await fail(deps, record, `no permitted pool offers the requested capabilities (${reason})`);
      return done;
    }
    await requeue(deps, record, `waiting for a pool: ${reason}`, record.attempts);
    return retryAfter(capacityRetrySeconds);
  }

  let current = record;
  const rejected = [...ranked.rejected];
  for (const pool of candidates) {
    const poolName = pool.config.name;
    const adapter = deps.pools.adapterOf(poolName);
    current = await transitionOrReload(deps, current, {
      pool: poolName,
      placement: { pool: poolName, rejected, decidedAt: now().toISOString() },
      statusMessage: `provisioning on ${poolName}`,
    });
    const context = {
      sandboxId: record.id,
      orgId: record.orgId,
      pool: poolName,
      attempt: current.attempts + 1,
    };
    try {
      const installation = await deps.store.installation();
      const instance = await adapter.create(
        {
          id: record.id,
          installation,
          ...(record.template !== null && { template: record.template }),
          resources: record.resources,
          env: record.env,
          labels: {
            ...record.labels,
            'differently.dev/sandbox-id': record.id,
            'differently.dev/installation': installation,
            'differently.dev/org': record.orgId,
            ...(record.projectId !== null && { 'differently.dev/project': record.projectId }),
          },
          ttlSeconds: record.ttlSeconds,
          ...(record.fromSnapshot !== null && { fromSnapshot: record.fromSnapshot }),
        },
        { signal: AbortSignal.timeout(deps.config.scheduler.provisionTimeoutSeconds * 1000) },
      );
      await markRunning(deps, current, instance.ref, poolName);
      log.info('sandbox running', { ...context, backendRef: instance.ref });
      return done;
    } catch (error) {
      const code = isApiError(error) ? error.code : 'internal';
      const reason = error instanceof Error ? error.message : String(error);
      log.warn('adapter create failed', { ...context, code, error: describeError(error) });
      switch (code) {
        case 'insufficient_capacity':
          rejected.push({ pool: poolName, reason: `insufficient capacity: ${reason}` });
          continue;
        case 'invalid_request':
          await fail(deps, current, `the backend refused the request: ${reason}`);
          return done;
        case 'sandbox_failed':
          return countAttempt(deps, current, `sandbox failed on ${poolName}: ${reason}`);
        default:
          // provider_unavailable and anything unexpected: the pool is down until it is probed again.
          deps.pools.markUnhealthy(poolName, unhealthyForMs);
          return countAttempt(deps, current, `pool ${poolName} unavailable: ${reason}`);
      }
    }
  }
  await requeue(
    deps,
    current,
    `waiting for capacity: ${rejected.map((r) => `${r.pool}: ${r.reason}`).join('; ')}`,
    current.attempts,
  );
  return retryAfter(capacityRetrySeconds);
}

function queueDeadlinePassed(record: SandboxRecord, now: Date): boolean {
  if (record.queueTimeoutSeconds === null) return false;
  return now.getTime() - Date.parse(record.createdAt) > record.queueTimeoutSeconds * 1000;
}

/** queued -> provisioning (or provisioning -> provisioning on a new pool), conditional on the version. */
async function transitionOrReload(
  deps: ProvisionDeps,
  record: SandboxRecord,
  patch: Partial<SandboxRecord>,
): Promise<SandboxRecord> {
  const now = deps.now?.() ?? new Date();
  if (record.status === 'provisioning') {
    return deps.store.updateSandbox(
      record.id,
      { version: record.version, status: record.status },
      {
        ...patch,
        updatedAt: now.toISOString(),
      },
    );
  }
  return transitionSandbox(deps.store, record, 'provisioning', patch, now);
}

async function markRunning(deps: ProvisionDeps, record: SandboxRecord, backendRef: string, pool: string) {
  const now = deps.now?.() ?? new Date();
  try {
    await transitionSandbox(
      deps.store,
      record,
      'running',
      {
        backendRef,
        pool,
        statusMessage: null,
        expiresAt: new Date(now.getTime() + record.ttlSeconds * 1000).toISOString(),
      },
      now,
    );
  } catch (error) {
    if (!isApiError(error) || error.code !== 'conflict') throw error;
    // The sandbox changed while Create ran (most often: deleted). Hand the instance to termination.
    const latest = await deps.store.getSandbox(record.id);
    if (latest?.status === 'terminating' && latest.backendRef === null) {
      await deps.store.updateSandbox(
        latest.id,
        { version: latest.version, status: latest.status },
        { backendRef, pool },
      );
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
  if (attempts >= deps.config.scheduler.maxAttempts) {
    await fail(deps, record, `${reason} (gave up after ${attempts} attempts)`, attempts);
    return done;
  }
  await requeue(
    deps,
    record,
    `${reason}; retrying (attempt ${attempts} of ${deps.config.scheduler.maxAttempts})`,
    attempts,
  );
  return retryAfter(provisionBackoffSeconds(attempts));
}

async function requeue(
  deps: ProvisionDeps,
  record: SandboxRecord,
  reason: string,
  attempts: number,
): Promise<void> {
  const now = deps.now?.() ?? new Date();
  if (record.status === 'queued') {
    await deps.store.updateSandbox(
      record.id,
      { version: record.version, status: 'queued' },
      {
        statusMessage: reason,
        attempts,
        updatedAt: now.toISOString(),
      },
    );
    return;
  }
  await transitionSandbox(deps.store, record, 'queued', { statusMessage: reason, attempts }, now);
}

async function fail(deps: ProvisionDeps, record: SandboxRecord, reason: string, attempts = record.attempts) {
  const now = deps.now?.() ?? new Date();
  await transitionSandbox(deps.store, record, 'failed', { statusMessage: reason, attempts }, now);
  deps.log.warn('sandbox failed', { sandboxId: record.id, orgId: record.orgId, reason });
}
