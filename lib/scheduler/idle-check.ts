import type { ExecutionAdapter } from '../adapter/port.ts';
import { actors } from '../audit/chain.ts';
import { isApiError } from '../errors.ts';
import type { Log } from '../log.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import { done, retryAfter, type WorkOutcome } from '../queue/outcome.ts';
import type { WorkMessage, WorkQueue } from '../queue/port.ts';
import { followBackendIdleOf, idleActionOnPool, secondsUntilIdle, sendCheck } from '../sandboxes/idle.ts';

export { startIdleClock } from '../sandboxes/idle.ts';

import { requestLifecycle } from '../sandboxes/lifecycle-request.ts';
import type { SandboxIdle } from '../schemas/sandbox-parts.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';

export interface IdleCheckDeps {
  store: SandboxStore;
  pools: PoolRegistry;
  queue: WorkQueue;
  log: Log;
  now?: () => Date;
}

/**
 * The delayed check: a sandbox still in the same running stretch with no call for `afterSeconds` is
 * paused (stopped where its pool cannot pause) through the operations worker, audited with the cause
 * `idle`; one called meanwhile gets a check for its new due time. A check of an earlier stretch (the
 * sandbox was paused and resumed since) is acknowledged: each stretch has one chain of checks.
 */
export async function checkIdle(deps: IdleCheckDeps, message: WorkMessage): Promise<WorkOutcome> {
  const now = deps.now?.() ?? new Date();
  const record = await deps.store.getSandbox(message.orgId, message.sandboxId);
  if (
    record === undefined ||
    record.status !== 'running' ||
    record.idle === null ||
    record.idle.runningSince !== message.idleSince
  ) {
    return done;
  }
  const last = (await deps.store.lastActivity(record.orgId, record.id)) ?? record.idle.runningSince;
  const left = secondsUntilIdle(record.idle, last, now);
  if (left !== null) {
    await sendCheck(deps.queue, record, left);
    return done;
  }
  await deps.pools.sync();
  await deps.pools.ensure(record.pool);
  const adapter = record.pool === null ? undefined : deps.pools.get(record.pool)?.adapter;
  if (record.idle.enforcedBy === 'backend' && adapter !== undefined && record.backendRef !== null) {
    return checkBackendIdle(deps, record, record.idle, record.backendRef, adapter, now);
  }
  const features = record.pool === null ? [] : deps.pools.featuresOf(record.pool);
  const action = idleActionOnPool(record.idle, adapter, features);
  if (action === null) {
    deps.log.info('idle sandbox left running: its pool can neither pause nor stop', {
      sandboxId: record.id,
      pool: record.pool,
    });
    return done;
  }
  try {
    await requestLifecycle(deps, record, action, {
      actor: actors.system,
      cause: 'idle',
      now,
      statusMessage: `idle for ${record.idle.afterSeconds} s: ${action === 'pause' ? 'pausing' : 'stopping'}`,
      patch: { idle: { ...record.idle, idledAt: now.toISOString() } },
    });
  } catch (error) {
    // Changed since it was read (a call, a lifecycle request): look again shortly.
    if (isApiError(error) && (error.code === 'conflict' || error.code === 'invalid_state')) {
      return retryAfter(1);
    }
    throw error;
  }
  return done;
}

/**
 * Due on a sandbox whose backend keeps its idle policy: the backend decides. Paused or stopped there, the
 * record follows (cause idle, so the next call resumes it); still running, the backend saw use the control
 * plane cannot (traffic to an exposed port) or its timer runs late, so the check looks again within a
 * minute. The control plane never pauses such a sandbox itself: it would undo the backend's view of use.
 */
async function checkBackendIdle(
  deps: IdleCheckDeps,
  record: SandboxRecord,
  idle: SandboxIdle,
  backendRef: string,
  adapter: ExecutionAdapter,
  now: Date,
): Promise<WorkOutcome> {
  try {
    if (await followBackendIdleOf(deps.store, adapter, record, idle, backendRef, now)) return done;
  } catch (error) {
    // Gone: the reconciler fails the sandbox. Followed first by a call: nothing left to do. Anything
    // else: SQS delivers the check again.
    if (isApiError(error) && (error.code === 'not_found' || error.code === 'conflict')) return done;
    throw error;
  }
  await sendCheck(deps.queue, record, Math.min(60, idle.afterSeconds));
  return done;
}
