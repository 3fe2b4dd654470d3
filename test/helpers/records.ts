import { newId } from '../../lib/ids.ts';
import type { SandboxRecord } from '../../lib/store/records.ts';
import type { Principal } from '../../lib/tenancy/auth.ts';

/** A complete sandbox record (queued, unplaced) for tests and benchmarks that write the store directly. */
export function sandboxRecord(orgId: string, overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  const now = new Date().toISOString();
  return {
    id: newId('sandbox'),
    orgId,
    projectId: null,
    status: 'queued',
    statusMessage: null,
    waitingFor: null,
    version: 1,
    pool: null,
    backendRef: null,
    template: null,
    resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
    labels: {},
    capabilities: [],
    env: {},
    ttlSeconds: 3600,
    queueTimeoutSeconds: null,
    allowedPools: null,
    regions: null,
    fromSnapshot: null,
    classification: null,
    attempts: 0,
    placement: { pool: null, rejected: [], decidedAt: null },
    createdAt: now,
    updatedAt: now,
    expiresAt: null,
    operation: null,
    billing: null,
    idle: null,
    network: null,
    warm: null,
    ...overrides,
  };
}

/** An org member's principal, as the authenticator would produce for one of its keys. */
export function orgPrincipal(
  orgId: string,
  projectId: string | null = null,
): Extract<Principal, { kind: 'org' }> {
  return { kind: 'org', orgId, keyId: 'key_test', role: 'member', projectId };
}
