import type { AuditInput } from '../audit/chain.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import { isSettledWithInstance, isTerminal, sandboxStatuses } from '../schemas/sandbox-status.ts';
import type { AuditStore } from './audit/port.ts';
import type { LeaseStore } from './leases/port.ts';
import type { PoolStore } from './pools/port.ts';
import type {
  OrgRecord,
  PlacementPolicy,
  PoolRecord,
  PoolView,
  SandboxRecord,
  SnapshotRecord,
} from './records.ts';
import type { SandboxStore } from './sandboxes/port.ts';
import type { SnapshotStore } from './snapshots/port.ts';
import type { TenancyStore } from './tenancy/port.ts';
import type { WebhookStore } from './webhooks/port.ts';

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
export interface Store
  extends TenancyStore,
    WebhookStore,
    PoolStore,
    SandboxStore,
    SnapshotStore,
    AuditStore,
    LeaseStore {}

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
