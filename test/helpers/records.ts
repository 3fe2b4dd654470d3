import { newId } from '../../lib/ids.ts';
import { queuedSandbox, type SandboxRecord } from '../../lib/store/records.ts';
import type { Principal } from '../../lib/tenancy/auth.ts';

/** A complete sandbox record (queued, unplaced) for tests and benchmarks that write the store directly. */
export function sandboxRecord(orgId: string, overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  const made = queuedSandbox(
    {
      id: newId('sandbox'),
      orgId,
      projectId: null,
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
      idle: null,
      network: null,
    },
    new Date().toISOString(),
  );
  return { ...made, ...overrides };
}

/** An org member's principal, as the authenticator would produce for one of its keys. */
export function orgPrincipal(
  orgId: string,
  projectId: string | null = null,
): Extract<Principal, { kind: 'org' }> {
  return { kind: 'org', orgId, keyId: 'key_test', role: 'member', projectId };
}
