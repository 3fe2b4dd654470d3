import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { exceededQuota, zeroUsage } from '../../quotas/usage.ts';
import { quotaExceeded } from '../errors.ts';
import { type MemoryState, paginate } from '../memory-state.ts';
import type { Page, PageRequest } from '../page.ts';
import type { SnapshotRecord } from '../records.ts';
import type { SnapshotStore } from './port.ts';
import { type SnapshotSettlement, snapshotHoldsSlot } from './port.ts';

/** The snapshots aggregate in memory, over the state every memory part shares (lib/store/memory-state.ts). */
export function memorySnapshots(s: MemoryState): SnapshotStore {
  const part: SnapshotStore = {
    async createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void> {
      const org = s.orgs.get(snapshot.orgId);
      if (org === undefined) throw errors.notFound('org', snapshot.orgId);
      if (s.snapshots.has(snapshot.id)) throw errors.conflict(`snapshot ${snapshot.id} already exists`);
      const usage = s.usage.get(snapshot.orgId) ?? { ...zeroUsage };
      const over = exceededQuota(usage, { snapshots: 1 }, org.quota);
      if (over !== undefined) throw quotaExceeded(over);
      s.usage.set(snapshot.orgId, { ...usage, snapshots: usage.snapshots + 1 });
      s.snapshots.set(snapshot.id, structuredClone(snapshot));
      s.append(snapshot.orgId, audit);
    },

    async getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined> {
      const snapshot = s.snapshots.get(id);
      return snapshot?.orgId === orgId ? structuredClone(snapshot) : undefined;
    },

    async listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>> {
      return paginate(
        [...s.snapshots.values()].filter((snapshot) => snapshot.orgId === orgId),
        page,
      );
    },

    async settleSnapshot(
      current: SnapshotRecord,
      patch: SnapshotSettlement,
      audit: AuditInput,
    ): Promise<SnapshotRecord> {
      const stored = s.snapshots.get(current.id);
      if (stored === undefined || stored.orgId !== current.orgId)
        throw errors.notFound('snapshot', current.id);
      if (stored.status !== 'creating') {
        throw errors.conflict(`snapshot ${current.id} is ${stored.status}, no longer creating`);
      }
      const next: SnapshotRecord = { ...stored, ...structuredClone(patch) };
      if (patch.status === 'failed') {
        const usage = s.usage.get(current.orgId) ?? { ...zeroUsage };
        s.usage.set(current.orgId, { ...usage, snapshots: usage.snapshots - 1 });
      }
      s.snapshots.set(next.id, next);
      s.append(next.orgId, audit);
      return structuredClone(next);
    },

    async deleteSnapshot(orgId: string, id: string, audit: AuditInput): Promise<SnapshotRecord> {
      const snapshot = s.snapshots.get(id);
      if (snapshot === undefined || snapshot.orgId !== orgId) throw errors.notFound('snapshot', id);
      const usage = s.usage.get(orgId) ?? { ...zeroUsage };
      // A failed snapshot gave its slot back when it failed.
      if (snapshotHoldsSlot(snapshot)) s.usage.set(orgId, { ...usage, snapshots: usage.snapshots - 1 });
      s.snapshots.delete(id);
      s.append(orgId, audit);
      return structuredClone(snapshot);
    },
  };
  return part;
}
