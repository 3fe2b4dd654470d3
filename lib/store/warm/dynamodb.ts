import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { keyOf, sortPrefix, warmPartition } from '../dynamodb/items.ts';
import { Canceled, del, put } from '../dynamodb/table-client.ts';
import { poolUpdate } from '../dynamodb/usage-updates.ts';
import { poolAtLimit } from '../errors.ts';
import { type SandboxRecord, type WarmRecord, warmRecordSchema } from '../records.ts';
import { newSandboxActions, replayIdempotent } from '../sandboxes/dynamodb.ts';
import type { IdempotencyClaim } from '../sandboxes/port.ts';
import { claimEffects } from './claim-effects.ts';
import type { WarmClaimResult, WarmStore } from './port.ts';

/** The warm instances aggregate on the one table: a partition per pool (docs/store.md). */
export function dynamoDbWarm(c: DynamoDbContext): WarmStore {
  const item = (record: WarmRecord) => ({ ...record, ...keyOf.warm(record.pool, record.id) });
  const asRead = (record: WarmRecord, label = 'warm') =>
    del(label, keyOf.warm(record.pool, record.id), 'version = :version', {
      values: { ':version': record.version },
    });
  return {
    async putWarm(record: WarmRecord, options: { poolLimit?: number } = {}): Promise<void> {
      const limit = options.poolLimit ?? 0;
      try {
        await c.t.transact([
          put('warm', item(record), 'attribute_not_exists(PK)'),
          poolUpdate(record.pool, 1, limit, c.table),
        ]);
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        if (error.failed.some((f) => f.label.startsWith('pool:'))) throw poolAtLimit(record.pool, limit);
        throw errors.conflict(`warm instance ${record.id} already exists`);
      }
    },

    async updateWarm(record, patch): Promise<WarmRecord> {
      const next = { ...record, ...patch, version: record.version + 1 };
      try {
        await c.t.transact([
          put('warm', item(next), 'version = :version', { values: { ':version': record.version } }),
        ]);
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        throw errors.conflict(`warm instance ${record.id} changed since it was read`);
      }
      return next;
    },

    async removeWarm(record: WarmRecord): Promise<boolean> {
      try {
        await c.t.transact([asRead(record), poolUpdate(record.pool, -1, 0, c.table)]);
        return true;
      } catch (error) {
        if (error instanceof Canceled && error.failed.some((f) => f.label === 'warm')) return false;
        throw error;
      }
    },

    async listWarm(pool: string): Promise<WarmRecord[]> {
      const records = await c.t.queryAll(warmPartition(pool), sortPrefix.warm, (stored) =>
        warmRecordSchema.parse(stored),
      );
      return records.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
    },

    async claimWarm(
      warm: WarmRecord,
      sandbox: SandboxRecord,
      audit: AuditInput,
      idempotency?: IdempotencyClaim,
    ): Promise<WarmClaimResult> {
      try {
        await c.audit.write(sandbox.orgId, audit, () => [
          // Only a ready instance, exactly as read: a second claim of it finds the record gone.
          del('warm', keyOf.warm(warm.pool, warm.id), 'version = :version AND #status = :ready', {
            names: { '#status': 'status' },
            values: { ':version': warm.version, ':ready': 'ready' },
          }),
          ...newSandboxActions(c, sandbox, claimEffects(sandbox), idempotency),
        ]);
        return { kind: 'claimed', sandbox };
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        const labels = new Set(error.failed.map((f) => f.label));
        if (labels.has('org')) throw errors.notFound('org', sandbox.orgId);
        if (idempotency !== undefined && labels.has('idempotency')) {
          return { kind: 'replayed', sandbox: await replayIdempotent(c, sandbox.orgId, idempotency) };
        }
        if (labels.has('warm')) return { kind: 'taken' };
        if (labels.has('usage')) throw errors.quotaExceeded("the org's quota would be exceeded");
        if ([...labels].some((label) => label.startsWith('budget:'))) {
          throw errors.quotaExceeded('a budget would be exceeded', { field: 'budget' });
        }
        throw errors.conflict(`sandbox ${sandbox.id} already exists`);
      }
    },
  };
}
