import type { IdlePolicy, SandboxIdle } from '../schemas/sandboxes.ts';

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

/** SQS delays a message at most 15 minutes: a longer wait is a chain of checks. */
export const maxCheckDelaySeconds = 900;

/** When the sandbox next falls idle, from its last activity: `null` when it already has. */
export function secondsUntilIdle(idle: SandboxIdle, lastActivity: string, now: Date): number | null {
  const due = Date.parse(lastActivity) + idle.afterSeconds * 1000;
  const left = Math.ceil((due - now.getTime()) / 1000);
  return left <= 0 ? null : left;
}

/** Whether a call on a sandbox in this state should resume it first: it was paused or stopped for idleness. */
export function idledAwaitingAccess(record: { status: string; idle: SandboxIdle | null }): boolean {
  return (record.status === 'paused' || record.status === 'stopped') && record.idle?.idledAt != null;
}
