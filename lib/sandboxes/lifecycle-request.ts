import { actors } from '../audit/chain.ts';
import { errors } from '../errors.ts';
import { describeError, type Log } from '../log.ts';
import type { WorkQueue } from '../queue/port.ts';
import type { LifecycleAction, SandboxOperation } from '../schemas/sandbox-parts.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxPatch, SandboxStore } from '../store/sandboxes/port.ts';
import { lifecycleMoves } from './lifecycle-moves.ts';
import { transitionSandbox } from './transition.ts';

export interface LifecycleRequestDeps {
  store: SandboxStore;
  queue: WorkQueue;
  log: Log;
}

/**
 * Records a lifecycle call (the record takes its transitional status, with a pending operation) and
 * queues it for the operations worker, which calls the backend. A caller's request, the idle policy
 * and a call resuming an idle sandbox all go through here. When the message cannot be queued nothing
 * was asked of the backend: the move is undone and the caller gets provider_unavailable.
 */
export async function requestLifecycle(
  deps: LifecycleRequestDeps,
  record: SandboxRecord,
  action: LifecycleAction,
  by: {
    actor: string;
    cause: SandboxOperation['cause'];
    now: Date;
    statusMessage?: string;
    patch?: SandboxPatch;
  },
): Promise<SandboxRecord> {
  const move = lifecycleMoves[action];
  const requestedAt = by.now.toISOString();
  const pending = await transitionSandbox(
    deps.store,
    record,
    move.pending,
    {
      statusMessage: by.statusMessage ?? `${action} requested`,
      operation: { action, state: 'pending', requestedAt, settledAt: null, error: null, cause: by.cause },
      ...by.patch,
    },
    { now: by.now, actor: by.actor, cause: by.cause },
  );
  try {
    await deps.queue.send('operations', { sandboxId: record.id, orgId: record.orgId, operation: action });
  } catch (error) {
    deps.log.error('could not queue a lifecycle operation; undoing it', {
      sandboxId: record.id,
      action,
      error: describeError(error),
    });
    await transitionSandbox(
      deps.store,
      pending,
      move.from,
      { statusMessage: null, operation: record.operation, idle: record.idle },
      { now: by.now, actor: actors.system },
    ).catch(() => undefined);
    throw errors.providerUnavailable('the operation could not be queued; try again', { action });
  }
  return pending;
}
