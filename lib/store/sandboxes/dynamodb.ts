import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { exceededQuota } from '../../quotas/usage.ts';
import type { SandboxStatus } from '../../schemas/sandbox-status.ts';
import { decodeCursor } from '../cursor.ts';
import { initLedger, ledgerLabel, ledgerUpdate, readLedger, refusal } from '../dynamodb/budget-ledgers.ts';
import { type DynamoDbContext, quotaOf, usageOf } from '../dynamodb/context.ts';
import { indexKeyOf, keyOf, orgPartition, queuedParent, sandboxItem, sortPrefix } from '../dynamodb/items.ts';
import { tableKeys } from '../dynamodb/table.ts';
import {
  type Action,
  afterSortKey,
  Canceled,
  check,
  isConditionFailed,
  put,
} from '../dynamodb/table-client.ts';
import { poolUpdate, usageUpdate, waitingOnPoolsUpdate, waitingUpdate } from '../dynamodb/usage-updates.ts';
import { idempotencyMismatch, poolAtLimit, quotaExceeded, waitingExceeded } from '../errors.ts';
import type { Page, PageRequest } from '../page.ts';
import { type SandboxRecord, sandboxRecordSchema } from '../records.ts';
import type {
  CreateSandboxResult,
  IdempotencyClaim,
  SandboxFilter,
  SandboxPatch,
  SandboxStore,
  UpdateSandboxOptions,
} from './port.ts';
import { dueKeyOf, indexedStatuses } from './status-index.ts';
import { type SandboxWriteEffects, sandboxWriteEffects } from './write-effects.ts';

/** The first sandbox of an Idempotency-Key the table already holds (a repeat with another body: a conflict). */
export async function replayIdempotent(
  c: DynamoDbContext,
  orgId: string,
  idempotency: IdempotencyClaim,
): Promise<SandboxRecord> {
  const record = await c.t.get(keyOf.idempotency(orgId, idempotency.key));
  if (record?.requestHash !== idempotency.requestHash) throw idempotencyMismatch(idempotency.key);
  const first =
    typeof record.sandboxId === 'string'
      ? await c.t.getParsed(keyOf.sandbox(orgId, record.sandboxId), sandboxRecordSchema)
      : undefined;
  if (first === undefined) throw errors.conflict(`the sandbox of Idempotency-Key ${idempotency.key} is gone`);
  return first;
}

/** A write's effects (lib/store/sandboxes/write-effects.ts) as the conditional updates beside its record. */
export function effectActions(
  c: DynamoDbContext,
  effects: SandboxWriteEffects,
  maxWaiting?: number,
): Action[] {
  const list: Action[] = [];
  const usage = usageUpdate(effects.orgId, effects.usage, c.table);
  if (usage !== undefined) list.push(usage);
  if (effects.waiting !== 0) list.push(waitingUpdate(effects.orgId, effects.waiting, c.table, maxWaiting));
  if (effects.waitingOnPools !== 0)
    list.push(waitingOnPoolsUpdate(effects.sandboxId, effects.waitingOnPools, c.table));
  for (const { pool, change, limit } of effects.poolSlots)
    list.push(poolUpdate(pool, change, limit, c.table));
  for (const { owner, change } of effects.ledgers) list.push(ledgerUpdate(owner, change));
  return list;
}

/**
 * The actions that record a new sandbox: its org must exist, its effects, the record and its id pointer
 * (neither may exist yet), and its Idempotency-Key (labelled `idempotency`: an unexpired one cancels).
 */
export function newSandboxActions(
  c: DynamoDbContext,
  sandbox: SandboxRecord,
  effects: SandboxWriteEffects,
  idempotency: IdempotencyClaim | undefined,
  maxWaiting?: number,
): Action[] {
  return [
    check('org', keyOf.org(sandbox.orgId), 'attribute_exists(PK)'),
    ...effectActions(c, effects, maxWaiting),
    put('sandbox', sandboxItem(sandbox), 'attribute_not_exists(PK)'),
    put('pointer', { ...keyOf.sandboxPointer(sandbox.id), orgId: sandbox.orgId }, 'attribute_not_exists(PK)'),
    ...(idempotency === undefined
      ? []
      : [
          {
            label: 'idempotency',
            item: {
              Put: {
                TableName: c.table,
                Item: {
                  ...keyOf.idempotency(sandbox.orgId, idempotency.key),
                  requestHash: idempotency.requestHash,
                  sandboxId: sandbox.id,
                  expiresAt: idempotency.expiresAt,
                  [tableKeys.ttl]: Math.ceil(Date.parse(idempotency.expiresAt) / 1000),
                },
                // An expired record is as good as none: expiry is read, never left to TTL deletion.
                ConditionExpression: 'attribute_not_exists(PK) OR expiresAt < :now',
                ExpressionAttributeValues: { ':now': c.now().toISOString() },
              },
            },
          },
        ]),
  ];
}

/** The sandboxes aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbSandboxes(c: DynamoDbContext): SandboxStore {
  async function writeSandbox(
    current: SandboxRecord,
    next: SandboxRecord,
    effects: SandboxWriteEffects,
    options: UpdateSandboxOptions,
  ): Promise<SandboxRecord> {
    const actions = (): Action[] => [
      put('sandbox', sandboxItem(next), 'version = :version AND #status = :status', {
        names: { '#status': 'status' },
        values: { ':version': current.version, ':status': current.status },
      }),
      ...effectActions(c, effects),
    ];
    try {
      await c.audit.write(current.orgId, options.audit, actions);
      return next;
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      const labels = new Set(error.failed.map((f) => f.label));
      // A budget's refusal is its caller's to explain (it may only need its month's headroom).
      if ([...labels].some((label) => label.startsWith('budget:')) && !labels.has('sandbox')) throw error;
      if (labels.has('sandbox')) {
        const stored = await part.getSandbox(current.orgId, current.id);
        if (stored === undefined) throw errors.notFound('sandbox', current.id);
        throw errors.conflict(`sandbox ${current.id} changed since it was read`, {
          expected: { version: current.version, status: current.status },
          actual: { version: stored.version, status: stored.status },
        });
      }
      if (labels.has('usage')) {
        const over = exceededQuota(
          await usageOf(c, current.orgId),
          effects.usage,
          await quotaOf(c, current.orgId),
        );
        throw over === undefined
          ? errors.quotaExceeded("the org's quota would be exceeded")
          : quotaExceeded(over);
      }
      const pool = error.failed.find((f) => f.label.startsWith('pool:'))?.label.slice(5);
      const slot = effects.poolSlots.find((taken) => taken.pool === pool);
      if (pool !== undefined) throw poolAtLimit(pool, slot?.limit ?? 0);
      throw error;
    }
  }

  const part: SandboxStore = {
    async createSandbox(
      sandbox: SandboxRecord,
      audit: AuditInput,
      idempotency?: IdempotencyClaim,
      options: { maxWaiting?: number } = {},
    ): Promise<CreateSandboxResult> {
      try {
        await c.audit.write(sandbox.orgId, audit, () =>
          newSandboxActions(
            c,
            sandbox,
            sandboxWriteEffects(undefined, sandbox),
            idempotency,
            options.maxWaiting,
          ),
        );
        return { sandbox, replayed: false };
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        if (error.failed.some((f) => f.label === 'org')) throw errors.notFound('org', sandbox.orgId);
        if (idempotency !== undefined && error.failed.some((f) => f.label === 'idempotency')) {
          return { sandbox: await replayIdempotent(c, sandbox.orgId, idempotency), replayed: true };
        }
        if (error.failed.some((f) => f.label === 'waiting')) throw waitingExceeded(options.maxWaiting ?? 0);
        throw errors.conflict(`sandbox ${sandbox.id} already exists`);
      }
    },

    async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
      return c.t.getParsed(keyOf.sandbox(orgId, id), sandboxRecordSchema);
    },

    async listQueued(orgId: string, limit: number): Promise<SandboxRecord[]> {
      const page = await c.t.queryPage(
        {
          IndexName: tableKeys.byParent.name,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': tableKeys.byParent.partition },
          ExpressionAttributeValues: { ':pk': queuedParent(orgId) },
        },
        limit,
        (item) => sandboxRecordSchema.parse(item),
        (sandbox) => sandbox.id,
      );
      return page.items;
    },

    async listSandboxes(
      orgId: string,
      filter: SandboxFilter,
      page: PageRequest,
    ): Promise<Page<SandboxRecord>> {
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = { ':pk': orgPartition(orgId), ':prefix': sortPrefix.sandboxes };
      const conditions: string[] = [];
      if (filter.status !== undefined) {
        names['#status'] = 'status';
        values[':status'] = filter.status;
        conditions.push('#status = :status');
      }
      if (filter.projectId !== undefined) {
        values[':project'] = filter.projectId;
        conditions.push('projectId = :project');
      }
      Object.entries(filter.labels ?? {}).forEach(([key, value], index) => {
        names['#labels'] = 'labels';
        names[`#l${index}`] = key;
        values[`:l${index}`] = value;
        conditions.push(`#labels.#l${index} = :l${index}`);
      });
      const after = decodeCursor(page.cursor);
      return c.t.queryPage(
        {
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ...(conditions.length > 0 && { FilterExpression: conditions.join(' AND ') }),
          ...(Object.keys(names).length > 0 && { ExpressionAttributeNames: names }),
          ExpressionAttributeValues: values,
          ...(after !== undefined && { ExclusiveStartKey: keyOf.sandbox(orgId, after) }),
        },
        page.limit,
        (item) => sandboxRecordSchema.parse(item),
        (sandbox) => sandbox.id,
      );
    },

    async listSandboxesByStatus(
      status: SandboxStatus,
      page: PageRequest,
      options: { dueBefore?: string } = {},
    ): Promise<Page<SandboxRecord>> {
      if (!indexedStatuses.has(status)) return { items: [], nextCursor: null };
      const after = decodeCursor(page.cursor);
      const before = options.dueBefore;
      const { partition, sort } = tableKeys.byStatus;
      const conditions = [`${partition} = :pk`];
      const values: Record<string, unknown> = { ':pk': indexKeyOf.byStatus(status) };
      if (after !== undefined && before !== undefined) {
        // BETWEEN is inclusive: start just past the cursor.
        conditions.push(`${sort} BETWEEN :after AND :before`);
        Object.assign(values, { ':after': `${after}\u0001`, ':before': before });
      } else if (after !== undefined) {
        conditions.push(`${sort} > :after`);
        values[':after'] = after;
      } else if (before !== undefined) {
        conditions.push(`${sort} < :before`);
        values[':before'] = before;
      }
      return c.t.queryPage(
        {
          IndexName: tableKeys.byStatus.name,
          KeyConditionExpression: conditions.join(' AND '),
          ExpressionAttributeValues: values,
        },
        page.limit,
        (item) => sandboxRecordSchema.parse(item),
        dueKeyOf,
      );
    },

    async listSandboxesByPool(pool: string, page: PageRequest): Promise<Page<SandboxRecord>> {
      return c.t.queryPage(
        {
          IndexName: tableKeys.byPool.name,
          ...afterSortKey(
            tableKeys.byPool.partition,
            indexKeyOf.byPool(pool),
            tableKeys.byPool.sort,
            decodeCursor(page.cursor),
          ),
        },
        page.limit,
        (item) => sandboxRecordSchema.parse(item),
        (sandbox) => sandbox.id,
      );
    },

    async findSandbox(id: string): Promise<SandboxRecord | undefined> {
      const orgId = (await c.t.get(keyOf.sandboxPointer(id)))?.orgId;
      return typeof orgId === 'string' ? part.getSandbox(orgId, id) : undefined;
    },

    async updateSandbox(
      current: SandboxRecord,
      patch: SandboxPatch,
      options: UpdateSandboxOptions = {},
    ): Promise<SandboxRecord> {
      const next: SandboxRecord = { ...current, ...patch, version: current.version + 1 };
      const effects = sandboxWriteEffects(current, next, options.poolLimit);
      // A month's first charge to a budget finds its ledger without headroom: give it one, then again.
      for (let attempt = 0; ; attempt++) {
        try {
          return await writeSandbox(current, next, effects, options);
        } catch (error) {
          if (!(error instanceof Canceled) || attempt >= 2) throw error;
          const failed = effects.ledgers.find(({ owner, change }) =>
            error.failed.some((f) => f.label === ledgerLabel(owner, change.month)),
          );
          if (failed === undefined) throw error;
          const ledger = await readLedger(c.t, failed.owner, failed.change.month);
          if (ledger.initialized) throw await refusal(c.t, failed.owner, failed.change);
          await initLedger(c.t, failed.owner, failed.change.month);
        }
      }
    },

    async touchSandbox(orgId: string, id: string, at: string): Promise<string | undefined> {
      try {
        const answer = await c.t.call((doc) =>
          doc.send(
            new UpdateCommand({
              TableName: c.table,
              Key: keyOf.activity(orgId, id),
              UpdateExpression: 'SET #at = :at',
              ConditionExpression: 'attribute_not_exists(#at) OR #at < :at',
              ExpressionAttributeNames: { '#at': 'at' },
              ExpressionAttributeValues: { ':at': at },
              ReturnValues: 'UPDATED_OLD',
            }),
          ),
        );
        const before = answer.Attributes?.at;
        return typeof before === 'string' ? before : undefined;
      } catch (error) {
        // A later call was recorded first: times only move forward, and the sandbox was in use.
        if (!isConditionFailed(error)) throw error;
        return at;
      }
    },

    async lastActivity(orgId: string, id: string): Promise<string | undefined> {
      const at = (await c.t.get(keyOf.activity(orgId, id)))?.at;
      return typeof at === 'string' ? at : undefined;
    },
  };
  return part;
}
