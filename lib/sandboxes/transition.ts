import { billingAfterMove, costView } from '../budgets/billing.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import type { SandboxView } from '../schemas/sandboxes.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { SandboxPatch, SandboxStore } from '../store/sandboxes/port.ts';
import { assertTransition } from './status-guards.ts';

export interface TransitionOptions {
  now: Date;
  /** Who made the change: a key id, `admin`, or `system`. */
  actor: string;
  /** maxConcurrency of the pool the sandbox takes a slot on (activation). */
  poolLimit?: number;
  /** Why the move happens, when it is not the caller's own request (`idle`): recorded in the audit. */
  cause?: string | undefined;
}

/**
 * Moves a sandbox to a new status: the move is checked against the state machine, and the write is
 * conditional on the status and version the caller read. Usage follows the status change and the
 * org's audit chain records it, both in the same atomic write.
 */
export async function transitionSandbox(
  store: SandboxStore,
  current: SandboxRecord,
  to: SandboxStatus,
  patch: SandboxPatch,
  options: TransitionOptions,
): Promise<SandboxRecord> {
  assertTransition(current.status, to);
  const pool = patch.pool !== undefined ? patch.pool : current.pool;
  // Budgets follow the move in the same write: time billed, reservations released or settled. An
  // activation brings its own reservation in the patch.
  const billing = patch.billing !== undefined ? patch.billing : billingAfterMove(current, to, options.now);
  // Running again ends an idle pause or stop: the next one starts from the policy.
  const idle =
    patch.idle === undefined && to === 'running' && current.idle !== null
      ? { ...current.idle, idledAt: null, runningSince: options.now.toISOString() }
      : (patch.idle ?? current.idle);
  return store.updateSandbox(
    current,
    // A status change ends any wait unless the caller names the new one.
    { waitingFor: null, ...patch, billing, idle, status: to, updatedAt: options.now.toISOString() },
    {
      audit: {
        actor: options.actor,
        action: `sandbox.${to}`,
        target: current.id,
        details: {
          from: current.status,
          to,
          pool,
          projectId: current.projectId,
          ...(options.cause !== undefined && { cause: options.cause }),
          ...(patch.statusMessage !== undefined &&
            patch.statusMessage !== null && { reason: patch.statusMessage }),
        },
      },
      ...(options.poolLimit !== undefined && { poolLimit: options.poolLimit }),
    },
  );
}

export function sandboxView(record: SandboxRecord): SandboxView {
  return {
    id: record.id,
    orgId: record.orgId,
    projectId: record.projectId,
    status: record.status,
    statusMessage: record.statusMessage,
    waitingFor: record.status === 'queued' ? record.waitingFor : null,
    pool: record.pool,
    template: record.template,
    resources: record.resources,
    labels: record.labels,
    capabilities: record.capabilities,
    network: record.network,
    envKeys: Object.keys(record.env).sort(),
    ttlSeconds: record.ttlSeconds,
    attempts: record.attempts,
    placement: record.placement,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    expiresAt: record.expiresAt,
    operation: record.operation,
    idle: record.idle,
    warm: record.warm,
    cost: record.billing === null ? null : costView(record.billing, record.status),
  };
}
