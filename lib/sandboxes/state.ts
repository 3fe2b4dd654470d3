import { errors } from '../errors.ts';

export const sandboxStatuses = [
  'queued',
  'provisioning',
  'running',
  'stopped',
  'paused',
  'stopping',
  'starting',
  'pausing',
  'resuming',
  'terminating',
  'terminated',
  'failed',
] as const;

export type SandboxStatus = (typeof sandboxStatuses)[number];

/**
 * Why a queued sandbox waits: no pool may or can run it (`pool`), its org's quota is full (`quota`), no
 * pool has room (`capacity`), or the snapshot it starts from is not ready (`snapshot`). Set with the
 * human statusMessage, read by the wake-ups (lib/scheduler/wake.ts), shown to clients; any status change
 * clears it.
 */
export const waitReasons = ['pool', 'quota', 'capacity', 'snapshot'] as const;
export type WaitReason = (typeof waitReasons)[number];

/**
 * Every legal move of a sandbox record, in one place. `failed` may still be terminated so that a
 * failed sandbox's backend instance (if any) is cleaned up; `terminated` is final.
 */
const transitions: Record<SandboxStatus, readonly SandboxStatus[]> = {
  queued: ['provisioning', 'terminating', 'failed'],
  // provisioning -> queued: a retry (backoff) hands the sandbox back to the fair queue.
  provisioning: ['queued', 'running', 'terminating', 'failed'],
  // running -> stopped / paused directly: the reconciler following an instance the backend changed.
  running: ['stopping', 'pausing', 'stopped', 'paused', 'terminating', 'failed'],
  stopped: ['starting', 'running', 'terminating', 'failed'],
  // paused -> stopped: the reconciler following an instance the backend stopped (seeds, section 6).
  paused: ['resuming', 'running', 'stopped', 'terminating', 'failed'],
  // Transitional: the operations worker finishes the move, or undoes it when the backend refused.
  stopping: ['stopped', 'running', 'terminating', 'failed'],
  starting: ['running', 'stopped', 'terminating', 'failed'],
  pausing: ['paused', 'running', 'terminating', 'failed'],
  resuming: ['running', 'paused', 'terminating', 'failed'],
  terminating: ['terminated'],
  terminated: [],
  failed: ['terminating'],
};

export function canTransition(from: SandboxStatus, to: SandboxStatus): boolean {
  return transitions[from].includes(to);
}

/** Throws invalid_state (409) naming both states when the move is not allowed. */
export function assertTransition(from: SandboxStatus, to: SandboxStatus): void {
  if (!canTransition(from, to)) {
    throw errors.invalidState(`a sandbox cannot go from ${from} to ${to}`, { status: from, requested: to });
  }
}

export function isTerminal(status: SandboxStatus): boolean {
  return status === 'terminated' || status === 'failed';
}

/** Statuses a lifecycle operation passes through while the backend works (see lib/operations). */
export const transitionalStatuses = ['stopping', 'starting', 'pausing', 'resuming'] as const;
export type TransitionalStatus = (typeof transitionalStatuses)[number];

/**
 * The settled statuses that hold a backend instance: what expiry applies to (the sweep, the status
 * index's due time), what the reconciler checks against the backend's list, and what can be snapshotted.
 */
export const settledWithInstance = [
  'running',
  'stopped',
  'paused',
] as const satisfies readonly SandboxStatus[];

export function isSettledWithInstance(status: SandboxStatus): boolean {
  return (settledWithInstance as readonly SandboxStatus[]).includes(status);
}

/** A sandbox an exec can run in: running, placed, with its backend instance (narrowed so). */
export function requireRunning<
  R extends { id: string; status: SandboxStatus; pool: string | null; backendRef: string | null },
>(record: R): R & { pool: string; backendRef: string } {
  if (record.status !== 'running' || record.pool === null || record.backendRef === null) {
    throw errors.invalidState(`exec needs a running sandbox; ${record.id} is ${record.status}`, {
      status: record.status,
    });
  }
  return record as R & { pool: string; backendRef: string };
}
