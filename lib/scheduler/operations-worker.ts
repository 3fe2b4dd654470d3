import { type ExecutionAdapter, isLifecycle, isPauser, isSnapshotter } from '../adapter/port.ts';
import { actors } from '../audit/chain.ts';
import type { Config } from '../config.ts';
import { type ApiError, errors, isApiError } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { PoolRegistry } from '../pools/registry.ts';
import { done, retryAfter, type WorkOutcome } from '../queue/outcome.ts';
import type { WorkMessage, WorkQueue } from '../queue/port.ts';
import { actionOf, lifecycleMoves, snapshotableStatuses } from '../sandboxes/lifecycle-moves.ts';
import { transitionSandbox } from '../sandboxes/transition.ts';
import { wakeWaiters } from '../sandboxes/wake-waiters.ts';
import type { LifecycleAction, SandboxOperation } from '../schemas/sandbox-parts.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import type { SandboxRecord, SnapshotRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import type { SnapshotStore } from '../store/snapshots/port.ts';
import { provisionBackoffSeconds } from './backoff.ts';
import { checkIdle, startIdleClock } from './idle-check.ts';

export interface OperationsDeps {
  store: SandboxStore & SnapshotStore;
  pools: PoolRegistry;
  queue: WorkQueue;
  config: Config;
  log: Log;
  now?: () => Date;
}

const system = actors.system;
/** Receives of one operation message while its backend is unavailable before the operation fails. */
export const maxUnavailableReceives = 5;

/**
 * The operations worker: finishes a stop, start, pause, resume or snapshot that the API recorded (the
 * record is written before any backend call, so nothing exists on a backend without one). The record
 * is the truth: a message for an operation already settled is acknowledged. A crashed worker's message
 * comes back after its visibility timeout and the call is made again: lifecycle calls are idempotent
 * (an instance already in the target state counts as done) and a snapshot carries its record's id.
 */
export async function runOperation(
  deps: OperationsDeps,
  message: WorkMessage,
  receiveCount = 1,
): Promise<WorkOutcome> {
  if (message.snapshotId !== undefined) return takeSnapshot(deps, message, receiveCount);
  if (message.idleSince !== undefined) return checkIdle(deps, message);
  return finishLifecycle(deps, message, receiveCount);
}

async function finishLifecycle(
  deps: OperationsDeps,
  message: WorkMessage,
  receiveCount: number,
): Promise<WorkOutcome> {
  const now = () => deps.now?.() ?? new Date();
  const record = await deps.store.getSandbox(message.orgId, message.sandboxId);
  const action = record === undefined ? undefined : actionOf(record.status);
  if (record === undefined || action === undefined || (message.operation ?? action) !== action) {
    deps.log.info('operation message for a sandbox not in that operation; acknowledged', { ...message });
    return done;
  }
  const move = lifecycleMoves[action];
  await deps.pools.sync();
  await deps.pools.ensure(record.pool);
  let adapter: ExecutionAdapter;
  try {
    adapter = deps.pools.adapterOf(record.pool ?? '');
  } catch (error) {
    return settleLifecycle(deps, record, move.from, asApiError(error));
  }
  const ref = record.backendRef ?? '';
  const signal = AbortSignal.timeout(deps.config.scheduler.operationTimeoutSeconds * 1000);
  try {
    await callLifecycle(adapter, action, ref, signal);
  } catch (error) {
    const failure = asApiError(error);
    // Done already (a repeated call after a crash, or the backend moved first): the target state counts.
    if (failure.code === 'invalid_state' && (await instanceIn(adapter, ref, move.to))) {
      return settleLifecycle(deps, record, move.to, null);
    }
    if (failure.code === 'not_found') {
      await transitionSandbox(
        deps.store,
        record,
        'failed',
        {
          statusMessage: 'backend instance disappeared',
          operation: settled(record.operation, action, now(), failure),
        },
        { now: now(), actor: system, cause: 'backend' },
      );
      return done;
    }
    if (failure.code === 'provider_unavailable' || failure.code === 'internal') {
      await deps.pools.markDown(record.pool ?? '', failure.message);
      if (receiveCount < maxUnavailableReceives) {
        deps.log.warn('operation backend unavailable; retrying', {
          sandboxId: record.id,
          action,
          receiveCount,
          error: describeError(error),
        });
        return retryAfter(provisionBackoffSeconds(receiveCount));
      }
    }
    deps.log.warn('operation failed on the backend; the sandbox keeps its status', {
      sandboxId: record.id,
      action,
      error: describeError(error),
    });
    return settleLifecycle(deps, record, move.from, failure);
  }
  return settleLifecycle(deps, record, move.to, null);
}

/** Ends the transitional status: in `to` (success) or back where it came from (failure, with the error). */
type SettleDeps = Pick<OperationsDeps, 'store' | 'queue' | 'log' | 'now'>;

async function settleLifecycle(
  deps: SettleDeps,
  record: SandboxRecord,
  to: SandboxStatus,
  failure: ApiError | null,
): Promise<WorkOutcome> {
  const now = deps.now?.() ?? new Date();
  const action = actionOf(record.status);
  if (action === undefined) return done;
  let settledRecord: SandboxRecord;
  try {
    settledRecord = await transitionSandbox(
      deps.store,
      record,
      to,
      {
        statusMessage:
          failure === null
            ? action === 'stop'
              ? 'stopped by request'
              : null
            : `${action} failed on the backend: ${failure.message}`,
        operation: settled(record.operation, action, now, failure),
      },
      { now, actor: system, cause: record.operation?.cause === 'idle' ? 'idle' : undefined },
    );
  } catch (error) {
    // Deleted or changed meanwhile: the record is the truth and no longer waits for this operation.
    if (isApiError(error) && (error.code === 'conflict' || error.code === 'invalid_state')) return done;
    throw error;
  }
  if (to === 'running') await startIdleClock(deps, settledRecord, now);
  // Stop released cpu and memory, a failed start gave its reservation back: waiters may fit now.
  if (to === 'stopped') await wakeWaiters(deps, { orgId: record.orgId, pool: record.pool });
  return done;
}

function settled(
  operation: SandboxOperation | null,
  action: LifecycleAction,
  at: Date,
  failure: ApiError | null,
): SandboxOperation {
  return {
    action,
    requestedAt: operation?.requestedAt ?? at.toISOString(),
    state: failure === null ? 'succeeded' : 'failed',
    settledAt: at.toISOString(),
    error: failure === null ? null : { code: publicCode(failure), message: failure.message },
    cause: operation?.cause ?? 'user',
  };
}

/** Adapter-level codes are shown to clients as provider_unavailable (lib/errors.ts). */
function publicCode(error: ApiError): string {
  return error.code === 'insufficient_capacity' || error.code === 'sandbox_failed'
    ? 'provider_unavailable'
    : error.code;
}

async function callLifecycle(
  adapter: ExecutionAdapter,
  action: LifecycleAction,
  ref: string,
  signal: AbortSignal,
): Promise<void> {
  const options = { signal };
  if (action === 'stop' && isLifecycle(adapter)) return adapter.stop(ref, options);
  if (action === 'start' && isLifecycle(adapter)) return adapter.start(ref, options);
  if (action === 'pause' && isPauser(adapter)) return adapter.pause(ref, options);
  if (action === 'resume' && isPauser(adapter)) return adapter.resume(ref, options);
  throw errors.unsupportedOperation(action, { adapter: adapter.info().kind });
}

async function instanceIn(adapter: ExecutionAdapter, ref: string, status: SandboxStatus): Promise<boolean> {
  try {
    const instance = await adapter.get(ref, { signal: AbortSignal.timeout(30_000) });
    return instance.state === status;
  } catch {
    return false;
  }
}

function asApiError(error: unknown): ApiError {
  if (isApiError(error)) return error;
  return errors.providerUnavailable(error instanceof Error ? error.message : String(error));
}

/**
 * Takes a snapshot recorded as creating. The snapshot's id goes to the adapter, which uses it where the
 * backend can name snapshots, so a repeated call after a crash finds the same one. If the record can no
 * longer be made ready (deleted, or failed meanwhile), the backend snapshot is deleted again: no
 * artefact without a record.
 */
async function takeSnapshot(
  deps: OperationsDeps,
  message: WorkMessage,
  receiveCount: number,
): Promise<WorkOutcome> {
  const now = () => deps.now?.() ?? new Date();
  const snapshot = await deps.store.getSnapshot(message.orgId, message.snapshotId ?? '');
  if (snapshot === undefined || snapshot.status !== 'creating') return done;
  const sandbox = await deps.store.getSandbox(snapshot.orgId, snapshot.sandboxId);
  if (sandbox === undefined || !snapshotableStatuses.includes(sandbox.status)) {
    return failSnapshot(
      deps,
      snapshot,
      `the sandbox is ${sandbox?.status ?? 'gone'}: a snapshot needs it running, stopped or paused`,
    );
  }
  await deps.pools.sync();
  await deps.pools.ensure(snapshot.pool);
  let adapter: ExecutionAdapter;
  try {
    adapter = deps.pools.adapterOf(snapshot.pool);
  } catch (error) {
    return failSnapshot(deps, snapshot, asApiError(error).message);
  }
  if (!isSnapshotter(adapter)) return failSnapshot(deps, snapshot, 'the pool no longer takes snapshots');
  let taken: Awaited<ReturnType<typeof adapter.snapshot>>;
  try {
    taken = await adapter.snapshot(sandbox.backendRef ?? '', snapshot.kind, {
      signal: AbortSignal.timeout(deps.config.scheduler.operationTimeoutSeconds * 1000),
      id: snapshot.id,
    });
  } catch (error) {
    const failure = asApiError(error);
    if (failure.code === 'provider_unavailable' || failure.code === 'internal') {
      await deps.pools.markDown(snapshot.pool, failure.message);
      if (receiveCount < maxUnavailableReceives) return retryAfter(provisionBackoffSeconds(receiveCount));
    }
    return failSnapshot(deps, snapshot, `the backend refused the snapshot: ${failure.message}`);
  }
  try {
    await deps.store.settleSnapshot(
      snapshot,
      {
        status: 'ready',
        statusMessage: null,
        backendRef: taken.ref,
        kind: taken.kind,
        sizeBytes: taken.sizeBytes,
        updatedAt: now().toISOString(),
      },
      {
        actor: system,
        action: 'snapshot.ready',
        target: snapshot.id,
        details: { sandboxId: snapshot.sandboxId, kind: taken.kind, pool: snapshot.pool },
      },
    );
  } catch (error) {
    if (!isApiError(error) || (error.code !== 'conflict' && error.code !== 'not_found')) throw error;
    // Another delivery of this message may have recorded this very snapshot: then it is no leftover.
    const now = await deps.store.getSnapshot(snapshot.orgId, snapshot.id);
    if (now?.status === 'ready' && now.backendRef === taken.ref) return done;
    deps.log.warn('snapshot taken for a record that is no longer creating; deleting it on the backend', {
      snapshotId: snapshot.id,
      backendRef: taken.ref,
    });
    await adapter.deleteSnapshot(taken.ref, { signal: AbortSignal.timeout(60_000) });
  }
  return done;
}

async function failSnapshot(
  deps: SettleDeps,
  snapshot: SnapshotRecord,
  reason: string,
): Promise<WorkOutcome> {
  try {
    await deps.store.settleSnapshot(
      snapshot,
      { status: 'failed', statusMessage: reason, updatedAt: (deps.now?.() ?? new Date()).toISOString() },
      {
        actor: system,
        action: 'snapshot.failed',
        target: snapshot.id,
        details: { sandboxId: snapshot.sandboxId, pool: snapshot.pool, reason },
      },
    );
  } catch (error) {
    if (!isApiError(error) || (error.code !== 'conflict' && error.code !== 'not_found')) throw error;
  }
  return done;
}

/**
 * Settles an operation whose message was dead-lettered (the sweep): a lifecycle call goes back to where
 * it came from, a snapshot fails. Nothing was left on the backend that the record does not say.
 */
export async function abandonOperation(deps: SettleDeps, message: WorkMessage): Promise<void> {
  if (message.snapshotId !== undefined) {
    const snapshot = await deps.store.getSnapshot(message.orgId, message.snapshotId);
    if (snapshot?.status === 'creating')
      await failSnapshot(deps, snapshot, 'the operation could not be completed in time');
    return;
  }
  const record = await deps.store.getSandbox(message.orgId, message.sandboxId);
  const action = record === undefined ? undefined : actionOf(record.status);
  if (record === undefined || action === undefined) return;
  await settleLifecycle(
    deps,
    record,
    lifecycleMoves[action].from,
    errors.providerUnavailable('the operation could not be completed in time'),
  );
}
