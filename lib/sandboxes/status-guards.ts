import { errors } from '../errors.ts';
import { canTransition, type SandboxStatus } from '../schemas/sandbox-status.ts';

/** Throws invalid_state (409) naming both states when the move is not allowed. */
export function assertTransition(from: SandboxStatus, to: SandboxStatus): void {
  if (!canTransition(from, to)) {
    throw errors.invalidState(`a sandbox cannot go from ${from} to ${to}`, { status: from, requested: to });
  }
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
