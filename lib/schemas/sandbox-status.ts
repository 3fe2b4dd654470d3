/**
 * The sandbox status vocabulary: every status, why a queued sandbox waits, every legal move between
 * statuses and the groups callers ask about. Pure data, read by the store, the schemas and the services;
 * the guards that refuse a move live in lib/sandboxes/status-guards.ts.
 */
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
 * human statusMessage, read by the wake-ups (lib/sandboxes/wake-waiters.ts), shown to clients; any status change
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

export function isTerminal(status: SandboxStatus): boolean {
  return status === 'terminated' || status === 'failed';
}

/** Statuses a lifecycle operation passes through while the backend works (lib/sandboxes/lifecycle-moves.ts). */
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
