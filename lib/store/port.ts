import type { AuditEvent, AuditInput, ChainHead } from '../audit/chain.ts';
import type { Ledger } from '../budgets/ledger.ts';
import type { Usage } from '../quotas/usage.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import { isSettledWithInstance, isTerminal, sandboxStatuses } from '../schemas/sandbox-status.ts';
import type { IdlePolicy } from '../schemas/sandboxes.ts';
import type { Quota } from '../schemas/tenancy.ts';
import type { WebhookRecord } from '../schemas/webhooks.ts';
import type {
  KeyRecord,
  OrgRecord,
  PlacementPolicy,
  PoolRecord,
  PoolView,
  ProjectRecord,
  SandboxRecord,
  SnapshotRecord,
} from './records.ts';

/** The audit chain that records installation-wide changes (pools, policy), verified like an org's. */
export const installationChain = 'installation';

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

export interface IdempotencyClaim {
  key: string;
  /** SHA-256 of the canonical request body: a repeat with another body is a conflict. */
  requestHash: string;
  /** After this the key may be used again; records are filtered by it, never trusted to TTL. */
  expiresAt: string;
}

export interface CreateSandboxResult {
  sandbox: SandboxRecord;
  /** True when an earlier request with the same Idempotency-Key already created this sandbox. */
  replayed: boolean;
}

export interface UpdateSandboxOptions {
  /** Recorded in the org's audit chain in the same write as the change. */
  audit?: AuditInput;
  /** maxConcurrency of the pool a slot is taken on; 0 or absent: no limit. */
  poolLimit?: number;
}

/**
 * The state port. Every implementation (memory, DynamoDB) passes the same conformance suite.
 *
 * - Every sandbox update is conditional on the status and version the caller read; a lost race is a
 *   `conflict` error, never a silent overwrite.
 * - Usage follows status (lib/quotas/usage.ts holdingsOf): the org usage aggregate and the pool's slot count
 *   change in the same atomic write as the sandbox; an increase past the org quota is `quota_exceeded`,
 *   past the pool's limit `insufficient_capacity`, and then nothing is written.
 * - Budgets follow the sandbox's billing (lib/budgets/billing.ts ledgerChanges): the month's ledgers of
 *   its org and its project change in the same atomic write; a charge past what is left of a budget is
 *   `quota_exceeded` (details.field `budget`), and then nothing is written.
 * - Audit events are appended to the org's hash chain in the same atomic write as the change they record.
 */
export interface Store {
  /** The installation id, created once per store and stable afterwards. */
  installation(): Promise<string>;

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

  /** Replaces the org's default idle policy (null: none); not_found for an unknown org. */
  setIdlePolicy(orgId: string, policy: IdlePolicy | null, audit: AuditInput): Promise<void>;

  /**
   * Registers a webhook endpoint of an org; refused with quota_exceeded past `max` endpoints (counted in
   * the same write), not_found for an unknown org.
   */
  createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void>;
  getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined>;
  /** Every endpoint of the org (at most maxWebhooksPerOrg): what each lifecycle event fans out to. */
  listWebhooks(orgId: string): Promise<WebhookRecord[]>;
  /** Replaces an endpoint's secrets (a rotation), conditional on the ones read: conflict otherwise. */
  updateWebhookSecrets(
    current: WebhookRecord,
    secrets: WebhookRecord['secrets'],
    audit: AuditInput,
  ): Promise<void>;
  deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void>;

  createProject(project: ProjectRecord, audit: AuditInput): Promise<void>;
  getProject(orgId: string, id: string): Promise<ProjectRecord | undefined>;
  listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>>;

  /** Pools registered at runtime (audited in the installation chain); `create` fails with conflict on a taken name. */
  putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void>;
  getPool(name: string): Promise<PoolRecord | undefined>;
  listPools(): Promise<PoolRecord[]>;
  deletePool(name: string, audit: AuditInput): Promise<void>;
  /** Stores a probe's view; the pool's down mark is kept apart and never overwritten by it. */
  putPoolView(view: PoolView): Promise<void>;
  /**
   * An adapter error said the pool's backend is down (provider_unavailable): every container sees the pool
   * unhealthy from its next sync until a probe that started after `at` succeeds. Marks only move forward.
   */
  markPoolDown(pool: string, at: string, reason: string): Promise<void>;
  /** Every probed view, with the pool's latest down mark folded in (downSince, downReason). */
  listPoolViews(): Promise<PoolView[]>;
  getPolicy(): Promise<PlacementPolicy | undefined>;
  putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void>;
  /**
   * Runtime pools, their views (down marks folded in) and the stored policy, in one read; `version`
   * changes with every write among them (pools, policy, probed views, down marks), so a container that
   * holds this version knows without reading them again that nothing has changed.
   */
  readPools(): Promise<PoolsState>;

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
  /** Active slots taken on a pool. */
  getPoolUsage(pool: string): Promise<number>;

  /**
   * Records a new (queued) sandbox. With `maxWaiting`, refused with quota_exceeded when the org already
   * has that many waiting (queued or provisioning), checked in the same write; a replay is never refused.
   */
  createSandbox(
    sandbox: SandboxRecord,
    audit: AuditInput,
    idempotency?: IdempotencyClaim,
    options?: { maxWaiting?: number },
  ): Promise<CreateSandboxResult>;
  getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined>;
  /** The org's queued sandboxes, the longest idle first, from an index of them alone (never a scan of the org). */
  listQueued(orgId: string, limit: number): Promise<SandboxRecord[]>;
  listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>>;
  /**
   * Sandboxes of every org in one status, by their due time (dueTimeOf), earliest first, optionally only
   * those due before a time: the sweep's view. Terminal statuses are not indexed.
   */
  listSandboxesByStatus(
    status: SandboxStatus,
    page: PageRequest,
    options?: { dueBefore?: string },
  ): Promise<Page<SandboxRecord>>;
  /** Live sandboxes placed on a pool (queued ones with no pool are not), by id: the reconciler's view. */
  listSandboxesByPool(pool: string, page: PageRequest): Promise<Page<SandboxRecord>>;
  /** A sandbox by id alone, whatever its org: for backend instances, which know only the sandbox id. */
  findSandbox(id: string): Promise<SandboxRecord | undefined>;
  /** Applies `patch` to `current` if it is still what is stored; returns the stored result. */
  updateSandbox(
    current: SandboxRecord,
    patch: SandboxPatch,
    options?: UpdateSandboxOptions,
  ): Promise<SandboxRecord>;

  /**
   * Records a call on a sandbox (exec, files, ports) for its idle policy, apart from its record: no
   * version moves, so a call never conflicts with a lifecycle write. Times only move forward. Answers the
   * activity recorded before it (none for the first call; `at` itself when a later call was recorded
   * first), so a call can tell from the same write whether the sandbox had been idle.
   */
  touchSandbox(orgId: string, id: string, at: string): Promise<string | undefined>;
  /** The last call recorded by touchSandbox, if any. */
  lastActivity(orgId: string, id: string): Promise<string | undefined>;

  /** Records a snapshot and takes one of the org's maxSnapshots in the same write (quota_exceeded past it). */
  createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void>;
  getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined>;
  listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>>;
  /**
   * Ends a snapshot's creation: ready with its backend ref, or failed (its slot given back in the same
   * write). Conditional on the record still being creating: otherwise conflict (not_found if deleted).
   */
  settleSnapshot(
    current: SnapshotRecord,
    patch: SnapshotSettlement,
    audit: AuditInput,
  ): Promise<SnapshotRecord>;
  /** Removes the record and gives its slot back in the same write (unless it failed); a missing one is not_found. */
  deleteSnapshot(orgId: string, id: string, audit: AuditInput): Promise<SnapshotRecord>;

  appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent>;
  /** Links audit records still waiting to enter the org's chain (stores that defer linking). */
  linkAudit(orgId: string): Promise<void>;

  /**
   * Takes a named lease until `until` if it is free or expired; false when another owner holds it.
   * Singletons (the reconciler) rely on it rather than on the platform running one copy.
   */
  acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean>;
  releaseLease(name: string, owner: string): Promise<void>;
  auditHead(orgId: string): Promise<ChainHead>;
  /** Events in seq order; the cursor continues after the last event returned. */
  listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>>;
}

/** What a request reads with its API key (Store.getKeyWith), in the key's org. */
export interface ReadAlong {
  orgId: string;
  org?: boolean;
  sandboxId?: string;
  /** The org's count of waiting (queued or provisioning) sandboxes. */
  waiting?: boolean;
  poolsVersion?: boolean;
}

/** What was read along with a key: `null` where the item does not exist, absent where it was not asked for. */
export interface ReadAlongResult {
  org?: OrgRecord | null;
  sandbox?: SandboxRecord | null;
  waiting?: number;
  poolsVersion?: string | null;
}

export interface PoolsState {
  pools: PoolRecord[];
  views: PoolView[];
  policy: PlacementPolicy | undefined;
  /** null until the first pool or policy change. */
  version: string | null;
}

/** How a snapshot's creation ends. */
export type SnapshotSettlement = Pick<SnapshotRecord, 'status' | 'statusMessage' | 'updatedAt'> &
  Partial<Pick<SnapshotRecord, 'backendRef' | 'sizeBytes' | 'kind'>>;

/** Whether a snapshot holds one of its org's maxSnapshots: creating and ready ones do, failed ones not. */
export function snapshotHoldsSlot(snapshot: Pick<SnapshotRecord, 'status'>): boolean {
  return snapshot.status !== 'failed';
}

/** Statuses in which a sandbox waits for a backend: what `maxQueued` bounds. A retry moves between them. */
export function isWaiting(status: SandboxStatus): boolean {
  return status === 'queued' || status === 'provisioning';
}

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
