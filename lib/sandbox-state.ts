import { errors } from './errors.ts';

export const sandboxStatuses = [
  'queued',
  'provisioning',
  'running',
  'stopped',
  'paused',
  'terminating',
  'terminated',
  'failed',
] as const;

export type SandboxStatus = (typeof sandboxStatuses)[number];

/**
 * Every legal move of a sandbox record, in one place. `failed` may still be terminated so that a
 * failed sandbox's backend instance (if any) is cleaned up; `terminated` is final.
 */
const transitions: Record<SandboxStatus, readonly SandboxStatus[]> = {
  queued: ['provisioning', 'terminating', 'failed'],
  // provisioning -> queued: a retry (backoff) hands the sandbox back to the fair queue.
  provisioning: ['queued', 'running', 'terminating', 'failed'],
  running: ['stopped', 'paused', 'terminating', 'failed'],
  stopped: ['running', 'terminating', 'failed'],
  paused: ['running', 'terminating', 'failed'],
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

/** Statuses that hold a backend instance and a pool slot. */
export function holdsInstance(status: SandboxStatus): boolean {
  return status === 'running' || status === 'stopped' || status === 'paused';
}
