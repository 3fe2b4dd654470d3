import type { AuditInput } from '../../audit/chain.ts';
import type { Page, PageRequest } from '../page.ts';
import type { SnapshotRecord } from '../records.ts';

/**
 * The snapshots aggregate: records and the org's snapshot slots they hold.
 */
export interface SnapshotStore {
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
}

/** How a snapshot's creation ends. */
export type SnapshotSettlement = Pick<SnapshotRecord, 'status' | 'statusMessage' | 'updatedAt'> &
  Partial<Pick<SnapshotRecord, 'backendRef' | 'sizeBytes' | 'kind'>>;

/** Whether a snapshot holds one of its org's maxSnapshots: creating and ready ones do, failed ones not. */
export function snapshotHoldsSlot(snapshot: Pick<SnapshotRecord, 'status'>): boolean {
  return snapshot.status !== 'failed';
}
