import type { SandboxStatus } from '../sandbox-state.ts';
import type { KeyRecord, OrgRecord, SandboxRecord } from './records.ts';

export interface PageRequest {
  cursor?: string | undefined;
  limit: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface SandboxFilter {
  status?: SandboxStatus | undefined;
  projectId?: string | undefined;
  labels?: Record<string, string> | undefined;
}

/** Fields a sandbox update may change; id, orgId and createdAt never change. */
export type SandboxPatch = Partial<Omit<SandboxRecord, 'id' | 'orgId' | 'createdAt' | 'version'>>;

export interface SandboxUpdateCondition {
  /** The version the caller read; a different stored version is a conflict. */
  version: number;
  /** The status the caller read; a different stored status is a conflict. */
  status: SandboxStatus;
}

/**
 * The state port. Every implementation (memory, DynamoDB) passes the same conformance suite.
 * Lost races surface as `conflict` ApiErrors, never as silent overwrites.
 */
export interface Store {
  /** The installation id, created once per store and stable afterwards. */
  installation(): Promise<string>;

  createOrg(org: OrgRecord): Promise<void>;
  getOrg(id: string): Promise<OrgRecord | undefined>;
  listOrgs(page: PageRequest): Promise<Page<OrgRecord>>;

  createKey(key: KeyRecord): Promise<void>;
  getKey(id: string): Promise<KeyRecord | undefined>;
  listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>>;
  revokeKey(id: string, at: string): Promise<KeyRecord>;

  createSandbox(sandbox: SandboxRecord): Promise<void>;
  getSandbox(id: string): Promise<SandboxRecord | undefined>;
  listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>>;
  /** Conditional on the caller's view of status and version; returns the stored result. */
  updateSandbox(id: string, condition: SandboxUpdateCondition, patch: SandboxPatch): Promise<SandboxRecord>;
}
