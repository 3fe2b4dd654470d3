import type { Trust } from '../adapter/contract.ts';
import type { SandboxStatus } from '../sandbox-state.ts';
import type { PlacementDecision, Resources } from '../schemas/sandboxes.ts';
import type { Quota } from '../schemas/tenancy.ts';

/** Records as the store keeps them. Public views are derived from these in lib/views.ts. */

export interface OrgRecord {
  id: string;
  name: string;
  quota: Quota;
  createdAt: string;
}

export interface KeyRecord {
  id: string;
  orgId: string;
  name: string;
  role: 'admin' | 'member';
  projectId: string | null;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface SandboxRecord {
  id: string;
  orgId: string;
  projectId: string | null;
  status: SandboxStatus;
  statusMessage: string | null;
  /** Increases by one on every write; every update is conditional on it. */
  version: number;
  pool: string | null;
  backendRef: string | null;
  template: string | null;
  resources: Resources;
  labels: Record<string, string>;
  capabilities: string[];
  env: Record<string, string>;
  ttlSeconds: number;
  queueTimeoutSeconds: number | null;
  allowedPools: string[] | null;
  regions: string[] | null;
  fromSnapshot: string | null;
  /** Counted provisioning attempts (insufficient_capacity is not counted). */
  attempts: number;
  placement: PlacementDecision;
  createdAt: string;
  updatedAt: string;
  expiresAt: string | null;
}

export interface PoolRecord {
  name: string;
  adapter: string;
  trust: Trust;
  region: string | null;
}
