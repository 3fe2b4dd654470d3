import type { AuditInput } from '../../audit/chain.ts';
import type { SandboxStatus } from '../../schemas/sandbox-status.ts';
import type { Page, PageRequest } from '../page.ts';
import type { SandboxRecord } from '../records.ts';

/**
 * The sandboxes aggregate: records, their conditional updates (usage, pool slots and budgets moving
 * in the same write), the indexes the workers read and activity for idle policies.
 */
export interface SandboxStore {
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

/** Statuses in which a sandbox waits for a backend: what `maxQueued` bounds. A retry moves between them. */
export function isWaiting(status: SandboxStatus): boolean {
  return status === 'queued' || status === 'provisioning';
}

/**
 * A queued sandbox waiting on the pools (for a pool, a pool's capacity or a snapshot), not on its org's
 * quota: a slot released on any pool may let it in, whichever org released it.
 */
export function waitsOnPools(record: Pick<SandboxRecord, 'status' | 'waitingFor'>): boolean {
  return record.status === 'queued' && record.waitingFor !== null && record.waitingFor !== 'quota';
}
