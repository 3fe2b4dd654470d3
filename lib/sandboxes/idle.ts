import {
  type ExecutionAdapter,
  type IdleRequest,
  isIdleKeeper,
  isLifecycle,
  isPauser,
} from '../adapter/port.ts';
import { actors } from '../audit/chain.ts';
import { describeError, type Log } from '../log.ts';
import type { WorkQueue } from '../queue/port.ts';
import type { IdlePolicy, SandboxIdle } from '../schemas/sandbox-parts.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxStore } from '../store/sandboxes/port.ts';
import { transitionSandbox } from './transition.ts';

/**
 * Idle policy: after `afterSeconds` without an exec, file or port call a running sandbox is paused (or
 * stopped), and the next exec or file call on it resumes it first. The sandbox's activity is kept in
 * the store apart from its record (Store.touchSandbox), so a call never races a lifecycle write; the
 * operations queue carries one delayed check per idle period (lib/scheduler/idle-check.ts).
 */

/** The policy a new sandbox takes: the request's (null: none), else its template's, else its org's. */
export function resolveIdlePolicy(
  requested: IdlePolicy | null | undefined,
  template: IdlePolicy | undefined,
  org: IdlePolicy | null,
): SandboxIdle | null {
  const policy = requested === undefined ? (template ?? org) : requested;
  if (policy === null) return null;
  return {
    afterSeconds: policy.afterSeconds,
    action: policy.action ?? null,
    idledAt: null,
    runningSince: null,
    enforcedBy: 'control-plane',
  };
}

/** What idleness does on a pool: pause where it can (unless the policy says stop), else stop, else nothing. */
export function idleActionOn(
  idle: SandboxIdle,
  can: { pause: boolean; stop: boolean },
): 'pause' | 'stop' | null {
  if (idle.action !== 'stop' && can.pause) return 'pause';
  if (can.stop) return 'stop';
  return null;
}

/** The pause or stop a pool's adapter can take (its interface and its advertised features). */
export function idleActionOnPool(
  idle: SandboxIdle,
  adapter: ExecutionAdapter | undefined,
  features: readonly string[],
): 'pause' | 'stop' | null {
  return idleActionOn(idle, {
    pause: adapter !== undefined && isPauser(adapter) && features.includes('lifecycle.pause-resume'),
    stop: adapter !== undefined && isLifecycle(adapter) && features.includes('lifecycle.stop-start'),
  });
}

/**
 * What a new instance is created with when its backend keeps this policy itself, exactly as set (a timer
 * in whole minutes keeps 120 s, not 90 s): the backend then enforces it. `undefined`: the control plane does.
 */
export function idleKeptByBackend(
  idle: SandboxIdle | null,
  adapter: ExecutionAdapter,
  features: readonly string[],
): IdleRequest | undefined {
  if (idle === null || !isIdleKeeper(adapter)) return undefined;
  const action = idleActionOnPool(idle, adapter, features);
  if (action === null) return undefined;
  const request = { afterSeconds: idle.afterSeconds, action };
  return adapter.keepsIdle(request) ? request : undefined;
}

/** SQS delays a message at most 15 minutes: a longer wait is a chain of checks. */
export const maxCheckDelaySeconds = 900;

/** When the sandbox next falls idle, from its last activity: `null` when it already has. */
export function secondsUntilIdle(idle: SandboxIdle, lastActivity: string, now: Date): number | null {
  const due = Date.parse(lastActivity) + idle.afterSeconds * 1000;
  const left = Math.ceil((due - now.getTime()) / 1000);
  return left <= 0 ? null : left;
}

/**
 * Whether the sandbox went its whole period without a call: since `lastActivity`, else since its current
 * stretch of running began. What a backend's own idle timer acts on.
 */
export function wentIdle(
  record: SandboxRecord,
  idle: SandboxIdle,
  lastActivity: string | undefined,
  now: Date,
): boolean {
  return secondsUntilIdle(idle, lastActivity ?? idle.runningSince ?? record.updatedAt, now) === null;
}

/** Whether a call on a sandbox in this state should resume it first: it was paused or stopped for idleness. */
export function idledAwaitingAccess(record: { status: string; idle: SandboxIdle | null }): boolean {
  return (record.status === 'paused' || record.status === 'stopped') && record.idle?.idledAt != null;
}

/**
 * Reads the instance of a sandbox whose backend keeps its idle policy and, when the backend paused or
 * stopped it, moves the record to follow (followBackendIdle). `undefined`: still running there. A lost race
 * with another writer following it first is the store's `conflict`, for the caller to settle.
 */
export async function followBackendIdleOf(
  store: SandboxStore,
  adapter: ExecutionAdapter,
  record: SandboxRecord,
  idle: SandboxIdle,
  backendRef: string,
  now: Date,
): Promise<SandboxRecord | undefined> {
  const { state } = await adapter.get(backendRef);
  if (state !== 'paused' && state !== 'stopped') return undefined;
  return followBackendIdle(store, record, idle, state, now);
}

/**
 * The record follows an instance its backend paused or stopped for idleness: the same move, audit (cause
 * `idle`) and `idledAt` as the control plane's own, so the next exec or file call resumes it first.
 */
export function followBackendIdle(
  store: SandboxStore,
  record: SandboxRecord,
  idle: SandboxIdle,
  state: 'paused' | 'stopped',
  now: Date,
): Promise<SandboxRecord> {
  return transitionSandbox(
    store,
    record,
    state,
    {
      statusMessage: `idle for ${idle.afterSeconds} s: ${state} by the backend's idle timer`,
      idle: { ...idle, idledAt: now.toISOString() },
    },
    { now, actor: actors.system, cause: 'idle' },
  );
}

/**
 * A sandbox with an idle policy just started running (created, resumed, started): its stretch of
 * activity begins now, and a check is queued for when it would fall idle. Best effort: a lost check
 * leaves the sandbox running until its TTL, as it would without the policy, and is logged.
 */
export async function startIdleClock(
  deps: { store: SandboxStore; queue: WorkQueue; log: Log },
  record: SandboxRecord,
  now: Date,
): Promise<void> {
  if (record.idle === null || record.status !== 'running' || record.idle.runningSince === null) return;
  try {
    await deps.store.touchSandbox(record.orgId, record.id, now.toISOString());
    await sendCheck(deps.queue, record, record.idle.afterSeconds);
  } catch (error) {
    deps.log.warn('could not start the idle clock; the sandbox runs until its TTL', {
      sandboxId: record.id,
      error: describeError(error),
    });
  }
}

export function sendCheck(queue: WorkQueue, record: SandboxRecord, seconds: number): Promise<void> {
  return queue.send(
    'operations',
    { sandboxId: record.id, orgId: record.orgId, idleSince: record.idle?.runningSince ?? '' },
    { delaySeconds: Math.min(maxCheckDelaySeconds, Math.max(1, seconds)) },
  );
}
