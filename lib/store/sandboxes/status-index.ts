import {
  isSettledWithInstance,
  isTerminal,
  type SandboxStatus,
  sandboxStatuses,
} from '../../schemas/sandbox-status.ts';
import type { SandboxRecord } from '../records.ts';

/** Statuses the status index holds; terminal ones leave it so it only grows with live work. */
export const indexedStatuses: ReadonlySet<SandboxStatus> = new Set(
  sandboxStatuses.filter((status) => !isTerminal(status)),
);

/**
 * When a live sandbox next needs the sweep's attention: its expiry while it holds an instance (running,
 * stopped, paused), otherwise its last update (a queued, transitional or terminating sandbox idle too long).
 */
export function dueTimeOf(record: Pick<SandboxRecord, 'status' | 'expiresAt' | 'updatedAt'>): string {
  const holds = isSettledWithInstance(record.status);
  return holds && record.expiresAt !== null ? record.expiresAt : record.updatedAt;
}

/** The status index's sort key: due time, then id. */
export function dueKeyOf(record: Pick<SandboxRecord, 'status' | 'expiresAt' | 'updatedAt' | 'id'>): string {
  return `${dueTimeOf(record)}#${record.id}`;
}
