import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { decodeCursor } from '../cursor.ts';
import { type DynamoDbContext, quotaOf, usageOf } from '../dynamodb/context.ts';
import { keyOf, orgPartition, sortPrefix } from '../dynamodb/items.ts';
import { Canceled, del, put } from '../dynamodb/table-client.ts';
import { snapshotSlot } from '../dynamodb/usage-updates.ts';
import { quotaExceeded } from '../errors.ts';
import type { Page, PageRequest } from '../page.ts';
import { type SnapshotRecord, snapshotRecordSchema } from '../records.ts';
import type { SnapshotStore } from './port.ts';
import { type SnapshotSettlement, snapshotHoldsSlot } from './port.ts';

/** The snapshots aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbSnapshots(c: DynamoDbContext): SnapshotStore {
  const part: SnapshotStore = {
    async createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void> {
      try {
        await c.audit.write(snapshot.orgId, audit, () => [
          put(
            'snapshot',
            { ...snapshot, ...keyOf.snapshot(snapshot.orgId, snapshot.id) },
            'attribute_not_exists(PK)',
          ),
          snapshotSlot(snapshot.orgId, 1, c.table),
        ]);
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        if (error.failed.some((f) => f.label === 'usage')) {
          const quota = await quotaOf(c, snapshot.orgId);
          const usage = await usageOf(c, snapshot.orgId);
          throw quotaExceeded({
            field: 'snapshots',
            limit: quota.maxSnapshots,
            used: usage.snapshots,
            requested: 1,
          });
        }
        throw errors.conflict(`snapshot ${snapshot.id} already exists`);
      }
    },

    async getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined> {
      return c.t.getParsed(keyOf.snapshot(orgId, id), snapshotRecordSchema);
    },

    async listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>> {
      const after = decodeCursor(page.cursor);
      return c.t.queryPage(
        {
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': orgPartition(orgId), ':prefix': sortPrefix.snapshots },
          ...(after !== undefined && { ExclusiveStartKey: keyOf.snapshot(orgId, after) }),
        },
        page.limit,
        (item) => snapshotRecordSchema.parse(item),
        (snapshot) => snapshot.id,
      );
    },

    async settleSnapshot(
      current: SnapshotRecord,
      patch: SnapshotSettlement,
      audit: AuditInput,
    ): Promise<SnapshotRecord> {
      const next: SnapshotRecord = { ...current, ...patch };
      try {
        await c.audit.write(current.orgId, audit, () => [
          put(
            'snapshot',
            { ...next, ...keyOf.snapshot(current.orgId, current.id) },
            'attribute_exists(PK) AND #status = :creating',
            { names: { '#status': 'status' }, values: { ':creating': 'creating' } },
          ),
          // A failed snapshot gives its slot back in the same write.
          ...(patch.status === 'failed' ? [snapshotSlot(current.orgId, -1, c.table)] : []),
        ]);
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        const stored = await part.getSnapshot(current.orgId, current.id);
        if (stored === undefined) throw errors.notFound('snapshot', current.id);
        throw errors.conflict(`snapshot ${current.id} is ${stored.status}, no longer creating`);
      }
      return next;
    },

    async deleteSnapshot(orgId: string, id: string, audit: AuditInput): Promise<SnapshotRecord> {
      const snapshot = await part.getSnapshot(orgId, id);
      if (snapshot === undefined) throw errors.notFound('snapshot', id);
      try {
        await c.audit.write(orgId, audit, () => [
          // Conditional on the status read: a settle in between must not make the slot count twice.
          del('snapshot', keyOf.snapshot(orgId, id), 'attribute_exists(PK) AND #status = :status', {
            names: { '#status': 'status' },
            values: { ':status': snapshot.status },
          }),
          // A failed snapshot gave its slot back when it failed.
          ...(snapshotHoldsSlot(snapshot) ? [snapshotSlot(orgId, -1, c.table)] : []),
        ]);
      } catch (error) {
        if (error instanceof Canceled) throw errors.notFound('snapshot', id);
        throw error;
      }
      return snapshot;
    },
  };
  return part;
}
