import { assertTransition, type SandboxStatus } from './sandbox-state.ts';
import type { SandboxView } from './schemas/sandboxes.ts';
import type { SandboxPatch, Store } from './store/port.ts';
import type { SandboxRecord } from './store/records.ts';

/**
 * Moves a sandbox to a new status: the transition is checked against the state machine, and the write
 * is conditional on the status and version the caller read.
 */
export async function transitionSandbox(
  store: Store,
  current: SandboxRecord,
  to: SandboxStatus,
  patch: SandboxPatch,
  now: Date,
): Promise<SandboxRecord> {
  assertTransition(current.status, to);
  return store.updateSandbox(
    current.id,
    { version: current.version, status: current.status },
    { ...patch, status: to, updatedAt: now.toISOString() },
  );
}

export function sandboxView(record: SandboxRecord): SandboxView {
  return {
    id: record.id,
    orgId: record.orgId,
    projectId: record.projectId,
    status: record.status,
    statusMessage: record.statusMessage,
    pool: record.pool,
    template: record.template,
    resources: record.resources,
    labels: record.labels,
    capabilities: record.capabilities,
    envKeys: Object.keys(record.env).sort(),
    ttlSeconds: record.ttlSeconds,
    attempts: record.attempts,
    placement: record.placement,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    expiresAt: record.expiresAt,
  };
}
