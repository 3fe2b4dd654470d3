import type { AuditInput } from '../../audit/chain.ts';
import type { Ledger } from '../../budgets/ledger.ts';
import type { NetworkPolicy } from '../../network/policy.ts';
import type { Usage } from '../../quotas/usage.ts';
import type { IdlePolicy } from '../../schemas/sandbox-parts.ts';
import type { Quota } from '../../schemas/tenancy-parts.ts';
import type { Page, PageRequest } from '../page.ts';
import type { KeyRecord, OrgRecord, ProjectRecord, SandboxRecord } from '../records.ts';

/** One of an org's defaults for new sandboxes (lib/tenancy/tenancy.ts sets them). */
export type OrgDefault =
  | { field: 'idlePolicy'; value: IdlePolicy | null }
  | { field: 'networkPolicy'; value: NetworkPolicy | null };

/**
 * The tenancy aggregate: orgs, their keys and projects, quotas, default idle policies, usage and
 * budget ledgers.
 */
export interface TenancyStore {
  createOrg(org: OrgRecord, audit: AuditInput): Promise<void>;

  getOrg(id: string): Promise<OrgRecord | undefined>;

  listOrgs(page: PageRequest): Promise<Page<OrgRecord>>;

  createKey(key: KeyRecord, audit: AuditInput): Promise<void>;

  getKey(id: string): Promise<KeyRecord | undefined>;

  /**
   * An API key and, in the same consistent round trip, what its request reads next in the key's org
   * (the sandbox it names, the org, its count of waiting sandboxes, the pools' version): an exec is one
   * read of the store, and revocation still takes effect at once.
   */
  getKeyWith(
    keyId: string,
    along: ReadAlong,
  ): Promise<{ key: KeyRecord | undefined; along: ReadAlongResult }>;

  /** The same reads without a key, in one consistent round trip (a worker's sandbox and the pools' version). */
  readAlong(along: ReadAlong): Promise<ReadAlongResult>;

  listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>>;

  revokeKey(id: string, at: string, audit: AuditInput): Promise<KeyRecord>;

  /**
   * Revokes `oldId` and creates `successor` in one conditional write: at most one successor per key, and
   * never one for a key already revoked (then invalid_state, and nothing is written).
   */
  rotateKey(oldId: string, successor: KeyRecord, at: string, audit: AuditInput): Promise<void>;

  /**
   * Replaces the org's quota and moves its headroom by the difference in the same write. A quota below
   * what is in use is allowed: running sandboxes keep running and new work waits until usage falls.
   */
  setQuota(orgId: string, quota: Quota, audit: AuditInput): Promise<OrgRecord>;

  /**
   * Replaces one of the org's defaults for new sandboxes, its idle or its egress policy (null: none);
   * not_found for an unknown org.
   */
  setOrgDefault(orgId: string, change: OrgDefault, audit: AuditInput): Promise<void>;

  createProject(project: ProjectRecord, audit: AuditInput): Promise<void>;

  getProject(orgId: string, id: string): Promise<ProjectRecord | undefined>;

  listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>>;

  getUsage(orgId: string): Promise<Usage>;

  /**
   * Sets the monthly budget (micros; null: none) of an org, or of one of its projects, and moves the
   * headroom of the given months' ledgers (the current and the next) to it in the same write, so a
   * reservation racing the change counts against the budget it finds, old or new, never neither.
   */
  setBudget(
    orgId: string,
    projectId: string | null,
    monthlyMicros: number | null,
    months: string[],
    audit: AuditInput,
  ): Promise<void>;

  /** A month's ledger of an org's budget (projectId null) or of one project's. */
  getLedger(orgId: string, projectId: string | null, month: string): Promise<Ledger>;
}

/** What a request reads with its API key (Store.getKeyWith), in the key's org. */
export interface ReadAlong {
  orgId: string;
  org?: boolean;
  sandboxId?: string;
  /** The org's count of waiting (queued or provisioning) sandboxes. */
  waiting?: boolean;
  /** The count of sandboxes of any org waiting on the pools (lib/store/sandboxes/port.ts `waitsOnPools`). */
  waitingOnPools?: boolean;
  poolsVersion?: boolean;
}

/** What was read along with a key: `null` where the item does not exist, absent where it was not asked for. */
export interface ReadAlongResult {
  org?: OrgRecord | null;
  sandbox?: SandboxRecord | null;
  waiting?: number;
  waitingOnPools?: number;
  poolsVersion?: string | null;
}
