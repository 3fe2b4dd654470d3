import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import {
  type AuditEvent,
  type AuditInput,
  type ChainHead,
  chainEvent,
  genesisHead,
} from '../../audit/chain.ts';
import { ApiError, errors } from '../../errors.ts';
import { newId } from '../../ids.ts';
import type { SandboxStatus } from '../../sandboxes/state.ts';
import type { Quota } from '../../schemas/tenancy.ts';
import { exceededQuota, type Usage, usageDelta, usageLimits, zeroUsage } from '../../tenancy/quota.ts';
import { decodeCursor, encodeCursor } from '../cursor.ts';
import { idempotencyMismatch, quotaExceeded, waitingExceeded } from '../memory.ts';
import {
  type CreateSandboxResult,
  dueKeyOf,
  type IdempotencyClaim,
  indexedStatuses,
  installationChain,
  isWaiting,
  type Page,
  type PageRequest,
  type SandboxFilter,
  type SandboxPatch,
  type SnapshotSettlement,
  type Store,
  snapshotHoldsSlot,
  type UpdateSandboxOptions,
} from '../port.ts';
import {
  auditEventSchema,
  type KeyRecord,
  keyRecordSchema,
  type OrgRecord,
  orgRecordSchema,
  type PlacementPolicy,
  type PoolDownMark,
  type PoolRecord,
  type PoolView,
  type ProjectRecord,
  placementPolicySchema,
  poolDownMarkSchema,
  poolRecordSchema,
  poolViewSchema,
  projectRecordSchema,
  type SandboxRecord,
  type SnapshotRecord,
  sandboxRecordSchema,
  snapshotRecordSchema,
  usageSchema,
  withDownMarks,
} from '../records.ts';
import { auditItem, keyOf, keysParent, orgsParent, sandboxItem, seqKey, usageItem } from './items.ts';
import { tableKeys } from './table.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** One action of a transaction, named so a cancellation reason can be traced to what failed. */
interface Action {
  label: string;
  item: TransactItem;
}

class Canceled extends Error {
  override readonly name = 'Canceled';
  readonly failed: { label: string; code: string }[];
  constructor(failed: { label: string; code: string }[], options?: ErrorOptions) {
    super(`transaction canceled: ${failed.map((f) => `${f.label}=${f.code}`).join(', ')}`, options);
    this.failed = failed;
  }
}

const throttlingErrors = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
]);

export interface DynamoDbStoreOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  now?: () => Date;
  /** How often a write or a link is retried when a concurrent transaction got there first. */
  maxChainRetries?: number;
  /**
   * Link audit outbox items into the chain right after each write (default). Off, linking happens when
   * the chain is read or when linkAudit is called (the sweep).
   */
  linkInline?: boolean;
  /**
   * Called with each batch of events about to be linked, before the link is written: a failure leaves
   * them in the outbox, so what it publishes is published at least once (the lifecycle event bus).
   */
  onLinking?: (events: AuditEvent[]) => Promise<void>;
}

/** Counters the benchmark reads. */
export interface DynamoDbStoreStats {
  transactions: number;
  /** Changes redone because a concurrent transaction touched the same item (TransactionConflict). */
  conflictRetries: number;
  /** Transactions that linked outbox items into a chain, and link attempts another linker beat. */
  linkTransactions: number;
  linkRetries: number;
}

/** Outbox items linked per transaction: 2 actions each plus the head stay within the 100-action limit. */
const outboxBatch = 25;
/** How long a linker may hold an org's linking lease; a crashed linker's lease lapses after it. */
const linkLeaseMs = 10_000;

const outboxItemSchema = z.object({
  SK: z.string(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  target: z.string(),
  details: z.record(z.string(), z.unknown()),
});

/**
 * The store on one DynamoDB table (docs/store.md). Every change is one TransactWriteItems with its
 * conditions: the sandbox's status and version, the usage bounds computed in code (conditions cannot
 * add), the pool's slot bound, and the org's audit chain head.
 */
export class DynamoDbStore implements Store {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #now: () => Date;
  readonly #maxChainRetries: number;
  #installation: string | undefined;
  readonly #linkInline: boolean;
  readonly #onLinking: ((events: AuditEvent[]) => Promise<void>) | undefined;
  readonly #linking = new Map<string, Promise<void>>();
  /** This handle's name as a linker (one per container). */
  readonly #linkerId = newId('key').slice(4);
  readonly #linkAgain = new Set<string>();
  readonly stats: DynamoDbStoreStats = {
    transactions: 0,
    conflictRetries: 0,
    linkTransactions: 0,
    linkRetries: 0,
  };

  constructor(options: DynamoDbStoreOptions) {
    this.#doc = options.client;
    this.#table = options.tableName;
    this.#now = options.now ?? (() => new Date());
    this.#maxChainRetries = options.maxChainRetries ?? 25;
    this.#linkInline = options.linkInline ?? true;
    this.#onLinking = options.onLinking;
  }

  async installation(): Promise<string> {
    if (this.#installation !== undefined) return this.#installation;
    const existing = await this.#get(keyOf.installation());
    if (existing !== undefined) return this.#rememberInstallation(existing);
    const id = newId('installation');
    try {
      await this.#call((doc) =>
        doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: { ...keyOf.installation(), id },
            ConditionExpression: 'attribute_not_exists(PK)',
          }),
        ),
      );
      this.#installation = id;
      return id;
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
      // Another cold start created it first: use theirs.
      return this.#rememberInstallation(await this.#get(keyOf.installation()));
    }
  }

  #rememberInstallation(item: Record<string, unknown> | undefined): string {
    const id = item?.id;
    if (typeof id !== 'string') throw new Error('the installation item has no id');
    this.#installation = id;
    return id;
  }

  async createOrg(org: OrgRecord, audit: AuditInput): Promise<void> {
    await this.#write(org.id, audit, () => [
      put(
        'org',
        { ...keyOf.org(org.id), GSI1PK: orgsParent, GSI1SK: org.id, ...org },
        'attribute_not_exists(PK)',
      ),
      put('usage', usageItem(org.id, zeroUsage, org.quota), 'attribute_not_exists(PK)'),
    ]).catch((error: unknown) => {
      if (error instanceof Canceled) throw errors.conflict(`org ${org.id} already exists`);
      throw error;
    });
  }

  async getOrg(id: string): Promise<OrgRecord | undefined> {
    const item = await this.#get(keyOf.org(id));
    return item === undefined ? undefined : orgRecordSchema.parse(item);
  }

  async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
    return this.#queryPage(
      {
        IndexName: tableKeys.byParent.name,
        ...afterSortKey('GSI1PK', orgsParent, 'GSI1SK', decodeCursor(page.cursor)),
      },
      page.limit,
      (item) => orgRecordSchema.parse(item),
      (org) => org.id,
    );
  }

  async createKey(key: KeyRecord, audit: AuditInput): Promise<void> {
    await this.#write(key.orgId, audit, () => [
      check('org', keyOf.org(key.orgId), 'attribute_exists(PK)'),
      put(
        'key',
        { ...keyOf.key(key.id), GSI1PK: keysParent(key.orgId), GSI1SK: key.id, ...key },
        'attribute_not_exists(PK)',
      ),
    ]).catch((error: unknown) => {
      if (error instanceof Canceled && error.failed.some((f) => f.label === 'org'))
        throw errors.notFound('org', key.orgId);
      if (error instanceof Canceled) throw errors.conflict(`key ${key.id} already exists`);
      throw error;
    });
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    const item = await this.#get(keyOf.key(id));
    return item === undefined ? undefined : keyRecordSchema.parse(item);
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
    return this.#queryPage(
      {
        IndexName: tableKeys.byParent.name,
        ...afterSortKey('GSI1PK', keysParent(orgId), 'GSI1SK', decodeCursor(page.cursor)),
      },
      page.limit,
      (item) => keyRecordSchema.parse(item),
      (key) => key.id,
    );
  }

  async revokeKey(id: string, at: string, audit: AuditInput): Promise<KeyRecord> {
    const key = await this.getKey(id);
    if (key === undefined) throw errors.notFound('key', id);
    if (key.revokedAt !== null) return key;
    try {
      await this.#write(key.orgId, audit, () => [
        {
          label: 'key',
          item: {
            Update: {
              TableName: this.#table,
              Key: keyOf.key(id),
              UpdateExpression: 'SET revokedAt = :at',
              ConditionExpression: 'attribute_exists(PK) AND attribute_type(revokedAt, :null)',
              ExpressionAttributeValues: { ':at': at, ':null': 'NULL' },
            },
          },
        },
      ]);
    } catch (error) {
      // Revoked concurrently: the key is revoked either way.
      if (!(error instanceof Canceled)) throw error;
    }
    const revoked = await this.getKey(id);
    if (revoked === undefined) throw errors.notFound('key', id);
    return revoked;
  }

  async rotateKey(oldId: string, successor: KeyRecord, at: string, audit: AuditInput): Promise<void> {
    try {
      await this.#write(successor.orgId, audit, () => [
        {
          label: 'old-key',
          item: {
            Update: {
              TableName: this.#table,
              Key: keyOf.key(oldId),
              UpdateExpression: 'SET revokedAt = :at',
              // Live, and of the same org: a concurrent rotation or revoke makes this whole write fail.
              ConditionExpression:
                'attribute_exists(PK) AND attribute_type(revokedAt, :null) AND orgId = :org',
              ExpressionAttributeValues: { ':at': at, ':null': 'NULL', ':org': successor.orgId },
            },
          },
        },
        put(
          'key',
          {
            ...keyOf.key(successor.id),
            GSI1PK: keysParent(successor.orgId),
            GSI1SK: successor.id,
            ...successor,
          },
          'attribute_not_exists(PK)',
        ),
      ]);
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      if (error.failed.some((f) => f.label === 'old-key')) {
        const old = await this.getKey(oldId);
        if (old === undefined) throw errors.notFound('key', oldId);
        throw errors.invalidState(`key ${oldId} is revoked; create a new key instead`);
      }
      throw errors.conflict(`key ${successor.id} already exists`);
    }
  }

  async setQuota(orgId: string, quota: Quota, audit: AuditInput): Promise<OrgRecord> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const item = await this.#get(keyOf.org(orgId));
      if (item === undefined) throw errors.notFound('org', orgId);
      const current = orgRecordSchema.parse(item);
      const revision = typeof item.quotaRevision === 'number' ? item.quotaRevision : 0;
      // Headroom moves by the quota's change; usage itself is untouched, so no sandbox races this.
      const headroom = usageLimits
        .map(({ field, limit }) => ({ field, change: quota[limit] - current.quota[limit] }))
        .filter(({ change }) => change !== 0);
      try {
        await this.#write(orgId, audit, () => [
          {
            label: 'org',
            item: {
              Update: {
                TableName: this.#table,
                Key: keyOf.org(orgId),
                UpdateExpression: 'SET quota = :quota, quotaRevision = :next',
                ConditionExpression:
                  revision === 0 ? 'attribute_not_exists(quotaRevision)' : 'quotaRevision = :revision',
                ExpressionAttributeValues: {
                  ':quota': quota,
                  ':next': revision + 1,
                  ...(revision !== 0 && { ':revision': revision }),
                },
              },
            },
          },
          ...(headroom.length === 0
            ? []
            : [
                {
                  label: 'usage',
                  item: {
                    Update: {
                      TableName: this.#table,
                      Key: keyOf.usage(orgId),
                      UpdateExpression: `ADD ${headroom.map(({ field }) => `#free_${field} :${field}`).join(', ')}`,
                      ExpressionAttributeNames: Object.fromEntries(
                        headroom.map(({ field }) => [`#free_${field}`, `free_${field}`]),
                      ),
                      ExpressionAttributeValues: Object.fromEntries(
                        headroom.map(({ field, change }) => [`:${field}`, change]),
                      ),
                    },
                  },
                },
              ]),
        ]);
        return { ...current, quota };
      } catch (error) {
        // Another quota change landed between the read and the write: read again and re-apply.
        if (!(error instanceof Canceled)) throw error;
      }
    }
    throw errors.conflict(`the quota of org ${orgId} is being changed concurrently; retry`);
  }

  async createProject(project: ProjectRecord, audit: AuditInput): Promise<void> {
    await this.#write(project.orgId, audit, () => [
      check('org', keyOf.org(project.orgId), 'attribute_exists(PK)'),
      put('project', { ...keyOf.project(project.orgId, project.id), ...project }, 'attribute_not_exists(PK)'),
    ]).catch((error: unknown) => {
      if (error instanceof Canceled && error.failed.some((f) => f.label === 'org'))
        throw errors.notFound('org', project.orgId);
      if (error instanceof Canceled) throw errors.conflict(`project ${project.id} already exists`);
      throw error;
    });
  }

  async getProject(orgId: string, id: string): Promise<ProjectRecord | undefined> {
    const item = await this.#get(keyOf.project(orgId, id));
    return item === undefined ? undefined : projectRecordSchema.parse(item);
  }

  async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>> {
    const after = decodeCursor(page.cursor);
    return this.#queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': keyOf.org(orgId).PK,
          ':from': after === undefined ? 'PRJ#' : `${keyOf.project(orgId, after).SK}#`,
          ':to': 'PRJ#~',
        },
      },
      page.limit,
      (item) => projectRecordSchema.parse(item),
      (project) => project.id,
    );
  }

  async putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void> {
    await this.#write(installationChain, audit, () => [
      put(
        'pool',
        { ...keyOf.pool(pool.name), ...pool },
        mode === 'create' ? 'attribute_not_exists(PK)' : 'attribute_exists(PK)',
      ),
    ]).catch((error: unknown) => {
      if (error instanceof Canceled && mode === 'create')
        throw errors.conflict(`pool ${pool.name} already exists`, { pool: pool.name });
      if (error instanceof Canceled) throw errors.notFound('pool', pool.name);
      throw error;
    });
  }

  async getPool(name: string): Promise<PoolRecord | undefined> {
    const item = await this.#get(keyOf.pool(name));
    return item === undefined ? undefined : poolRecordSchema.parse(item);
  }

  async listPools(): Promise<PoolRecord[]> {
    return this.#queryAll(keyOf.pool('').PK, 'POOL#', (item) => poolRecordSchema.parse(item));
  }

  async deletePool(name: string, audit: AuditInput): Promise<void> {
    await this.#write(installationChain, audit, () => [
      del('pool', keyOf.pool(name), 'attribute_exists(PK)'),
    ]).catch((error: unknown) => {
      if (error instanceof Canceled) throw errors.notFound('pool', name);
      throw error;
    });
    for (const key of [keyOf.poolView(name), keyOf.poolDown(name)]) {
      await this.#call((doc) => doc.send(new DeleteCommand({ TableName: this.#table, Key: key })));
    }
  }

  async putPoolView(view: PoolView): Promise<void> {
    // The down mark is its own item: a probe's view never overwrites a mark made while it ran.
    const { downSince: _since, downReason: _reason, ...probed } = view;
    await this.#call((doc) =>
      doc.send(new PutCommand({ TableName: this.#table, Item: { ...keyOf.poolView(view.pool), ...probed } })),
    );
  }

  async markPoolDown(pool: string, at: string, reason: string): Promise<void> {
    try {
      await this.#call((doc) =>
        doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: { ...keyOf.poolDown(pool), pool, at, reason },
            // Marks only move forward: an older one arriving late does not hide a newer one.
            ConditionExpression: 'attribute_not_exists(PK) OR #at < :at',
            ExpressionAttributeNames: { '#at': 'at' },
            ExpressionAttributeValues: { ':at': at },
          }),
        ),
      );
    } catch (error) {
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    }
  }

  async listPoolViews(): Promise<PoolView[]> {
    const items = await this.#queryAll(keyOf.poolView('').PK, 'VIEW', (item) => item);
    const marks = new Map<string, PoolDownMark>();
    const views: PoolView[] = [];
    for (const item of items) {
      if (String(item.SK).startsWith('VIEWDOWN#')) {
        const mark = poolDownMarkSchema.parse(item);
        marks.set(mark.pool, mark);
      } else views.push(poolViewSchema.parse(item));
    }
    return withDownMarks(views, marks);
  }

  async getPolicy(): Promise<PlacementPolicy | undefined> {
    const item = await this.#get(keyOf.policy());
    return item === undefined
      ? undefined
      : placementPolicySchema.parse({
          allowExternal: item.allowExternal,
          externalPools: item.externalPools,
        });
  }

  async putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void> {
    await this.#write(installationChain, audit, () => [
      put('policy', { ...keyOf.policy(), ...policy }, 'attribute_exists(PK) OR attribute_not_exists(PK)'),
    ]);
  }

  /** Every item of a small partition whose sort key starts with `prefix` (pools and their views). */
  async #queryAll<T>(
    partition: string,
    prefix: string,
    parse: (item: Record<string, unknown>) => T,
  ): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.#call((doc) =>
        doc.send(
          new QueryCommand({
            TableName: this.#table,
            KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
            ExpressionAttributeValues: { ':pk': partition, ':prefix': prefix },
            ConsistentRead: true,
            ...(startKey !== undefined && { ExclusiveStartKey: startKey }),
          }),
        ),
      );
      for (const item of result.Items ?? []) items.push(parse(item));
      startKey = result.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }

  async getUsage(orgId: string): Promise<Usage> {
    const item = await this.#get(keyOf.usage(orgId));
    return item === undefined ? { ...zeroUsage } : usageSchema.parse(item);
  }

  async getPoolUsage(pool: string): Promise<number> {
    const active = (await this.#get(keyOf.poolUsage(pool)))?.active;
    return typeof active === 'number' ? active : 0;
  }

  async createSandbox(
    sandbox: SandboxRecord,
    audit: AuditInput,
    idempotency?: IdempotencyClaim,
    options: { maxWaiting?: number } = {},
  ): Promise<CreateSandboxResult> {
    const now = this.#now().toISOString();
    try {
      await this.#write(sandbox.orgId, audit, () => [
        check('org', keyOf.org(sandbox.orgId), 'attribute_exists(PK)'),
        waitingUpdate(sandbox.orgId, 1, this.#table, options.maxWaiting),
        put('sandbox', sandboxItem(sandbox), 'attribute_not_exists(PK)'),
        put(
          'pointer',
          { ...keyOf.sandboxPointer(sandbox.id), orgId: sandbox.orgId },
          'attribute_not_exists(PK)',
        ),
        ...(idempotency === undefined
          ? []
          : [
              {
                label: 'idempotency',
                item: {
                  Put: {
                    TableName: this.#table,
                    Item: {
                      ...keyOf.idempotency(sandbox.orgId, idempotency.key),
                      requestHash: idempotency.requestHash,
                      sandboxId: sandbox.id,
                      expiresAt: idempotency.expiresAt,
                      [tableKeys.ttl]: Math.ceil(Date.parse(idempotency.expiresAt) / 1000),
                    },
                    // An expired record is as good as none: expiry is read, never left to TTL deletion.
                    ConditionExpression: 'attribute_not_exists(PK) OR expiresAt < :now',
                    ExpressionAttributeValues: { ':now': now },
                  },
                },
              },
            ]),
      ]);
      return { sandbox, replayed: false };
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      if (error.failed.some((f) => f.label === 'org')) throw errors.notFound('org', sandbox.orgId);
      if (idempotency !== undefined && error.failed.some((f) => f.label === 'idempotency')) {
        return this.#replay(sandbox.orgId, idempotency);
      }
      if (error.failed.some((f) => f.label === 'waiting')) throw waitingExceeded(options.maxWaiting ?? 0);
      throw errors.conflict(`sandbox ${sandbox.id} already exists`);
    }
  }

  async #replay(orgId: string, idempotency: IdempotencyClaim): Promise<CreateSandboxResult> {
    const record = await this.#get(keyOf.idempotency(orgId, idempotency.key));
    if (record?.requestHash !== idempotency.requestHash) throw idempotencyMismatch(idempotency.key);
    const first =
      typeof record.sandboxId === 'string' ? await this.getSandbox(orgId, record.sandboxId) : undefined;
    if (first === undefined)
      throw errors.conflict(`the sandbox of Idempotency-Key ${idempotency.key} is gone`);
    return { sandbox: first, replayed: true };
  }

  async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
    const item = await this.#get(keyOf.sandbox(orgId, id));
    return item === undefined ? undefined : sandboxRecordSchema.parse(item);
  }

  async listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':pk': `ORG#${orgId}`, ':prefix': 'SBX#' };
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
    return this.#queryPage(
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
  }

  async listSandboxesByStatus(
    status: SandboxStatus,
    page: PageRequest,
    options: { dueBefore?: string } = {},
  ): Promise<Page<SandboxRecord>> {
    if (!indexedStatuses.has(status)) return { items: [], nextCursor: null };
    const after = decodeCursor(page.cursor);
    const before = options.dueBefore;
    const conditions = ['GSI2PK = :pk'];
    const values: Record<string, unknown> = { ':pk': `STATUS#${status}` };
    if (after !== undefined && before !== undefined) {
      // BETWEEN is inclusive: start just past the cursor.
      conditions.push('GSI2SK BETWEEN :after AND :before');
      Object.assign(values, { ':after': `${after}\u0001`, ':before': before });
    } else if (after !== undefined) {
      conditions.push('GSI2SK > :after');
      values[':after'] = after;
    } else if (before !== undefined) {
      conditions.push('GSI2SK < :before');
      values[':before'] = before;
    }
    return this.#queryPage(
      {
        IndexName: tableKeys.byStatus.name,
        KeyConditionExpression: conditions.join(' AND '),
        ExpressionAttributeValues: values,
      },
      page.limit,
      (item) => sandboxRecordSchema.parse(item),
      dueKeyOf,
    );
  }

  async listSandboxesByPool(pool: string, page: PageRequest): Promise<Page<SandboxRecord>> {
    return this.#queryPage(
      {
        IndexName: tableKeys.byPool.name,
        ...afterSortKey('GSI3PK', `POOL#${pool}`, 'GSI3SK', decodeCursor(page.cursor)),
      },
      page.limit,
      (item) => sandboxRecordSchema.parse(item),
      (sandbox) => sandbox.id,
    );
  }

  async findSandbox(id: string): Promise<SandboxRecord | undefined> {
    const orgId = (await this.#get(keyOf.sandboxPointer(id)))?.orgId;
    return typeof orgId === 'string' ? this.getSandbox(orgId, id) : undefined;
  }

  async acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean> {
    try {
      await this.#call((doc) =>
        doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: { ...keyOf.lease(name), owner, until },
            ConditionExpression: 'attribute_not_exists(PK) OR #until < :now OR #owner = :owner',
            ExpressionAttributeNames: { '#until': 'until', '#owner': 'owner' },
            ExpressionAttributeValues: { ':now': now, ':owner': owner },
          }),
        ),
      );
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    try {
      await this.#call((doc) =>
        doc.send(
          new DeleteCommand({
            TableName: this.#table,
            Key: keyOf.lease(name),
            ConditionExpression: '#owner = :owner',
            ExpressionAttributeNames: { '#owner': 'owner' },
            ExpressionAttributeValues: { ':owner': owner },
          }),
        ),
      );
    } catch (error) {
      // Taken over after it expired: it is no longer ours to release.
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    }
  }

  async updateSandbox(
    current: SandboxRecord,
    patch: SandboxPatch,
    options: UpdateSandboxOptions = {},
  ): Promise<SandboxRecord> {
    const next: SandboxRecord = { ...current, ...patch, version: current.version + 1 };
    const delta = usageDelta(current, next);
    const actions = (): Action[] => {
      const list: Action[] = [
        put('sandbox', sandboxItem(next), 'version = :version AND #status = :status', {
          names: { '#status': 'status' },
          values: { ':version': current.version, ':status': current.status },
        }),
      ];
      const usage = usageUpdate(current.orgId, delta.org, this.#table);
      if (usage !== undefined) list.push(usage);
      // Leaving the waiting statuses frees a place in the org's queue (a retry moves within them).
      const waiting = Number(isWaiting(next.status)) - Number(isWaiting(current.status));
      if (waiting !== 0) list.push(waitingUpdate(current.orgId, waiting, this.#table));
      for (const [pool, change] of Object.entries(delta.pools)) {
        const limit = pool === next.pool ? (options.poolLimit ?? 0) : 0;
        list.push(poolUpdate(pool, change, limit, this.#table));
      }
      return list;
    };
    try {
      await this.#write(current.orgId, options.audit, actions);
      return next;
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      const labels = new Set(error.failed.map((f) => f.label));
      if (labels.has('sandbox')) {
        const stored = await this.getSandbox(current.orgId, current.id);
        if (stored === undefined) throw errors.notFound('sandbox', current.id);
        throw errors.conflict(`sandbox ${current.id} changed since it was read`, {
          expected: { version: current.version, status: current.status },
          actual: { version: stored.version, status: stored.status },
        });
      }
      if (labels.has('usage')) {
        const over = exceededQuota(
          await this.getUsage(current.orgId),
          delta.org,
          await this.#quotaOf(current.orgId),
        );
        throw over === undefined
          ? errors.quotaExceeded("the org's quota would be exceeded")
          : quotaExceeded(over);
      }
      const pool = error.failed.find((f) => f.label.startsWith('pool:'))?.label.slice(5);
      if (pool !== undefined) {
        throw errors.insufficientCapacity(
          `pool ${pool} is at its concurrency limit of ${options.poolLimit ?? 0}`,
          {
            pool,
            limit: options.poolLimit ?? 0,
          },
        );
      }
      throw error;
    }
  }

  async #quotaOf(orgId: string): Promise<Quota> {
    const org = await this.getOrg(orgId);
    if (org === undefined) throw errors.notFound('org', orgId);
    return org.quota;
  }

  async createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void> {
    try {
      await this.#write(snapshot.orgId, audit, () => [
        put(
          'snapshot',
          { ...snapshot, ...keyOf.snapshot(snapshot.orgId, snapshot.id) },
          'attribute_not_exists(PK)',
        ),
        snapshotSlot(snapshot.orgId, 1, this.#table),
      ]);
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      if (error.failed.some((f) => f.label === 'usage')) {
        const quota = await this.#quotaOf(snapshot.orgId);
        const usage = await this.getUsage(snapshot.orgId);
        throw quotaExceeded({
          field: 'snapshots',
          limit: quota.maxSnapshots,
          used: usage.snapshots,
          requested: 1,
        });
      }
      throw errors.conflict(`snapshot ${snapshot.id} already exists`);
    }
  }

  async getSnapshot(orgId: string, id: string): Promise<SnapshotRecord | undefined> {
    const item = await this.#get(keyOf.snapshot(orgId, id));
    return item === undefined ? undefined : snapshotRecordSchema.parse(item);
  }

  async listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>> {
    const after = decodeCursor(page.cursor);
    return this.#queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': `ORG#${orgId}`, ':prefix': 'SNP#' },
        ...(after !== undefined && { ExclusiveStartKey: keyOf.snapshot(orgId, after) }),
      },
      page.limit,
      (item) => snapshotRecordSchema.parse(item),
      (snapshot) => snapshot.id,
    );
  }

  async settleSnapshot(
    current: SnapshotRecord,
    patch: SnapshotSettlement,
    audit: AuditInput,
  ): Promise<SnapshotRecord> {
    const next: SnapshotRecord = { ...current, ...patch };
    try {
      await this.#write(current.orgId, audit, () => [
        put(
          'snapshot',
          { ...next, ...keyOf.snapshot(current.orgId, current.id) },
          'attribute_exists(PK) AND #status = :creating',
          { names: { '#status': 'status' }, values: { ':creating': 'creating' } },
        ),
        // A failed snapshot gives its slot back in the same write.
        ...(patch.status === 'failed' ? [snapshotSlot(current.orgId, -1, this.#table)] : []),
      ]);
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      const stored = await this.getSnapshot(current.orgId, current.id);
      if (stored === undefined) throw errors.notFound('snapshot', current.id);
      throw errors.conflict(`snapshot ${current.id} is ${stored.status}, no longer creating`);
    }
    return next;
  }

  async deleteSnapshot(orgId: string, id: string, audit: AuditInput): Promise<SnapshotRecord> {
    const snapshot = await this.getSnapshot(orgId, id);
    if (snapshot === undefined) throw errors.notFound('snapshot', id);
    try {
      await this.#write(orgId, audit, () => [
        // Conditional on the status read: a settle in between must not make the slot count twice.
        del('snapshot', keyOf.snapshot(orgId, id), 'attribute_exists(PK) AND #status = :status', {
          names: { '#status': 'status' },
          values: { ':status': snapshot.status },
        }),
        // A failed snapshot gave its slot back when it failed.
        ...(snapshotHoldsSlot(snapshot) ? [snapshotSlot(orgId, -1, this.#table)] : []),
      ]);
    } catch (error) {
      if (error instanceof Canceled) throw errors.notFound('snapshot', id);
      throw error;
    }
    return snapshot;
  }

  /** Appends one event now, on the current head; a linker or another append that moved the head first is retried. */
  async appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
    for (let attempt = 0; ; attempt++) {
      const head = await this.#readHead(orgId);
      const event = chainEvent(orgId, head, audit, this.#now().toISOString());
      try {
        await this.#transact([
          put('audit-event', auditItem(event), 'attribute_not_exists(PK)'),
          headPut(orgId, head, event),
        ]);
        return event;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        this.stats.linkRetries++;
        if (attempt >= this.#maxChainRetries) {
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        }
        await sleep(Math.random() * Math.min(5 * 2 ** attempt, 100));
      }
    }
  }

  async auditHead(orgId: string): Promise<ChainHead> {
    await this.linkAudit(orgId);
    return this.#readHead(orgId);
  }

  async listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
    await this.linkAudit(orgId);
    const after = Number(decodeCursor(page.cursor) ?? '0');
    return this.#queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND SK > :after',
        ExpressionAttributeValues: { ':pk': keyOf.auditEvent(orgId, 0).PK, ':after': `EVT#${seqKey(after)}` },
      },
      page.limit,
      (item) => auditEventSchema.parse(item),
      (event) => String(event.seq),
    );
  }

  /** Audit records of an org not yet linked into its chain (for operators and tests). */
  async outboxSize(orgId: string): Promise<number> {
    return (await this.#queryOutbox(orgId, { Select: 'COUNT' })).Count ?? 0;
  }

  /** The org's pending audit records, oldest first (consistent: a record just written is seen). */
  #queryOutbox(orgId: string, extra: Pick<QueryCommandInput, 'Limit' | 'Select'>) {
    return this.#call((doc) =>
      doc.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': keyOf.outbox(orgId, '').PK },
          ConsistentRead: true,
          ...extra,
        }),
      ),
    );
  }

  async #readHead(orgId: string): Promise<ChainHead> {
    const item = await this.#get(keyOf.chainHead(orgId));
    // An item holding only a linker's lease is a chain not started yet.
    if (item === undefined || (item.seq === undefined && item.hash === undefined)) return genesisHead;
    const { seq, hash } = item;
    if (typeof seq !== 'number' || typeof hash !== 'string')
      throw new Error(`the chain head of ${orgId} is corrupt`);
    return { seq, hash };
  }

  /**
   * Takes the org's linking lease on its chain head item (free, expired, or already this linker's).
   * Only the holder reads the head, numbers the pending records and publishes their events, so two
   * linkers never publish one record under two sequence numbers: a repeat publication after a crash
   * numbers the records from the same committed head, the same way.
   */
  async #claimLinking(orgId: string): Promise<boolean> {
    const now = this.#now().getTime();
    try {
      await this.#call((doc) =>
        doc.send(
          new UpdateCommand({
            TableName: this.#table,
            Key: keyOf.chainHead(orgId),
            UpdateExpression: 'SET linkLease = :owner, linkLeaseUntil = :until',
            ConditionExpression:
              'attribute_not_exists(linkLeaseUntil) OR linkLeaseUntil < :now OR linkLease = :owner',
            ExpressionAttributeValues: { ':owner': this.#linkerId, ':until': now + linkLeaseMs, ':now': now },
          }),
        ),
      );
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  }

  async #releaseLinking(orgId: string): Promise<void> {
    await this.#call((doc) =>
      doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: keyOf.chainHead(orgId),
          UpdateExpression: 'REMOVE linkLease, linkLeaseUntil',
          ConditionExpression: 'linkLease = :owner',
          ExpressionAttributeValues: { ':owner': this.#linkerId },
        }),
      ),
    ).catch((error: unknown) => {
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    });
  }

  /**
   * Links the org's pending outbox items into its audit chain, oldest first, and resolves when none is
   * left. Within this process one drain runs per org at a time (a call during a drain makes it look
   * again); across processes the head condition keeps every chain single: a linker that loses re-reads
   * and continues where the winner stopped.
   */
  linkAudit(orgId: string): Promise<void> {
    const running = this.#linking.get(orgId);
    if (running !== undefined) {
      this.#linkAgain.add(orgId);
      return running;
    }
    const drain = (async () => {
      try {
        do {
          this.#linkAgain.delete(orgId);
          await this.#linkOutbox(orgId);
        } while (this.#linkAgain.has(orgId));
      } finally {
        this.#linking.delete(orgId);
      }
    })();
    this.#linking.set(orgId, drain);
    return drain;
  }

  async #linkOutbox(orgId: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      // Nothing pending (the common case for reads): no lease is taken at all.
      const peek = await this.#queryOutbox(orgId, { Limit: 1 });
      if ((peek.Items ?? []).length === 0) return;
      if (!(await this.#claimLinking(orgId))) {
        // Another linker holds the lease and links these records too: wait for it, then look again.
        this.stats.linkRetries++;
        if (attempt >= this.#maxChainRetries)
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        await sleep(Math.random() * Math.min(10 * 2 ** attempt, 200));
        continue;
      }
      // Under the lease: the head read now is the one the numbering below commits on.
      let head = await this.#readHead(orgId);
      const pending = await this.#queryOutbox(orgId, { Limit: outboxBatch });
      const items = (pending.Items ?? []).map((item) => outboxItemSchema.parse(item));
      if (items.length === 0) {
        await this.#releaseLinking(orgId);
        return;
      }
      const previous = head;
      const events = items.map((item) => {
        const { actor, action, target, details } = item;
        const event = chainEvent(orgId, head, { actor, action, target, details }, item.at);
        head = event;
        return { outboxId: item.SK, event };
      });
      // Published before the link commits: if this fails, nothing is linked and the next link publishes again.
      try {
        await this.#onLinking?.(events.map(({ event }) => event));
      } catch (error) {
        await this.#releaseLinking(orgId);
        throw error;
      }
      const owner = { ':owner': this.#linkerId };
      const actions: Action[] = [
        ...events.map(({ event }) => put('audit-event', auditItem(event), 'attribute_not_exists(PK)')),
        ...events.map(({ outboxId }) => del('outbox', keyOf.outbox(orgId, outboxId), 'attribute_exists(PK)')),
        // The new head replaces the item, lease included: committing releases it.
        previous.seq === 0
          ? put(
              'audit-head',
              { ...keyOf.chainHead(orgId), seq: head.seq, hash: head.hash },
              'attribute_not_exists(seq) AND linkLease = :owner',
              { values: owner },
            )
          : put(
              'audit-head',
              { ...keyOf.chainHead(orgId), seq: head.seq, hash: head.hash },
              'seq = :seq AND linkLease = :owner',
              { values: { ':seq': previous.seq, ...owner } },
            ),
      ];
      try {
        await this.#transact(actions);
        this.stats.linkTransactions++;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        // The lease expired and another linker linked first: read again and continue after it.
        this.stats.linkRetries++;
        if (attempt >= this.#maxChainRetries)
          throw errors.providerUnavailable(`the audit chain of ${orgId} is busy; retry`, { retryable: true });
        await sleep(Math.random() * Math.min(5 * 2 ** attempt, 100));
      }
    }
  }

  /**
   * Runs a change as one transaction. Its audit record goes in as an outbox item of the org, with no
   * condition on the chain head, so changes of one org never contend on it; the ordered linker puts it
   * into the chain right after. A transaction that lost to a concurrent one is retried a few times;
   * every other cancellation is the caller's to interpret.
   */
  async #write(orgId: string, audit: AuditInput | undefined, build: () => Action[]): Promise<void> {
    const outboxId = newId('key').slice(4);
    for (let attempt = 0; ; attempt++) {
      const actions = build();
      if (audit !== undefined) {
        actions.push(
          put(
            'outbox',
            { ...keyOf.outbox(orgId, outboxId), orgId, at: this.#now().toISOString(), ...audit },
            'attribute_not_exists(PK)',
          ),
        );
      }
      try {
        await this.#transact(actions);
        if (audit !== undefined && this.#linkInline) {
          this.linkAudit(orgId).catch(() => {
            // The items stay in the outbox; the next link of this org (any write, read or the sweep) takes them.
          });
        }
        return;
      } catch (error) {
        if (!(error instanceof Canceled)) throw error;
        const retryable = error.failed.every(
          (f) => f.code === 'TransactionConflict' || f.code === 'ThrottlingError',
        );
        if (!retryable) throw error;
        if (attempt >= this.#maxChainRetries) {
          throw errors.providerUnavailable(
            `the state store is busy with other changes of org ${orgId}; retry`,
            {
              retryable: true,
            },
          );
        }
        this.stats.conflictRetries++;
        await sleep(Math.random() * Math.min(5 * 2 ** attempt, 200));
      }
    }
  }

  async #transact(actions: Action[]): Promise<void> {
    this.stats.transactions++;
    try {
      await this.#call((doc) =>
        doc.send(
          new TransactWriteCommand({ TransactItems: actions.map((a) => withTable(a.item, this.#table)) }),
        ),
      );
    } catch (error) {
      if (error instanceof TransactionCanceledException) {
        const reasons = error.CancellationReasons ?? [];
        const failed = actions
          .map((action, index) => ({ label: action.label, code: reasons[index]?.Code ?? 'Unknown' }))
          .filter((f) => f.code !== 'None');
        throw new Canceled(failed, { cause: error });
      }
      throw error;
    }
  }

  async #get(key: Record<string, string>): Promise<Record<string, unknown> | undefined> {
    const result = await this.#call((doc) =>
      doc.send(new GetCommand({ TableName: this.#table, Key: key, ConsistentRead: true })),
    );
    return result.Item;
  }

  /**
   * Queries until `limit + 1` matching items are found (filters can thin pages) or the partition ends, so
   * `nextCursor` is null exactly when nothing follows.
   */
  async #queryPage<T>(
    input: Omit<QueryCommandInput, 'TableName'>,
    limit: number,
    parse: (item: Record<string, unknown>) => T,
    cursorOf: (item: T) => string,
  ): Promise<Page<T>> {
    const items: T[] = [];
    let startKey = input.ExclusiveStartKey;
    do {
      const result = await this.#call((doc) =>
        doc.send(
          new QueryCommand({
            ...input,
            TableName: this.#table,
            Limit: Math.max(limit + 1, 25),
            ...(startKey !== undefined && { ExclusiveStartKey: startKey }),
          }),
        ),
      );
      for (const item of result.Items ?? []) items.push(parse(item));
      startKey = result.LastEvaluatedKey;
    } while (startKey !== undefined && items.length <= limit);
    const slice = items.slice(0, limit);
    const last = slice.at(-1);
    return {
      items: slice,
      nextCursor: items.length > limit && last !== undefined ? encodeCursor(cursorOf(last)) : null,
    };
  }

  /** Runs one SDK call; throttling the SDK's own retries could not absorb becomes a retryable 503. */
  async #call<T>(request: (doc: DynamoDBDocumentClient) => Promise<T>): Promise<T> {
    try {
      return await request(this.#doc);
    } catch (error) {
      if (error instanceof Error && throttlingErrors.has(error.name)) {
        throw new ApiError(
          'provider_unavailable',
          'the state store is throttling requests; retry shortly',
          { retryable: true },
          { cause: error },
        );
      }
      throw error;
    }
  }
}

/** A key condition on a partition, after a sort key when a cursor gives one (key values cannot be empty). */
function afterSortKey(partitionName: string, partition: string, sortName: string, after: string | undefined) {
  return after === undefined
    ? { KeyConditionExpression: `${partitionName} = :pk`, ExpressionAttributeValues: { ':pk': partition } }
    : {
        KeyConditionExpression: `${partitionName} = :pk AND ${sortName} > :after`,
        ExpressionAttributeValues: { ':pk': partition, ':after': after },
      };
}

/** Names and values a condition refers to. */
interface ConditionExpression {
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

function conditionOf(condition: string, expression: ConditionExpression) {
  return {
    ConditionExpression: condition,
    ...(expression.names && { ExpressionAttributeNames: expression.names }),
    ...(expression.values && { ExpressionAttributeValues: expression.values }),
  };
}

function put(
  label: string,
  item: Record<string, unknown>,
  condition: string,
  expression: ConditionExpression = {},
): Action {
  return { label, item: { Put: { TableName: '', Item: item, ...conditionOf(condition, expression) } } };
}

/** The chain head moves from `from` to `to` only if nobody moved it since it was read. */
function headPut(orgId: string, from: ChainHead, to: ChainHead): Action {
  const item = { ...keyOf.chainHead(orgId), seq: to.seq, hash: to.hash };
  // Never while a linker holds the lease: its published numbering must stay the committed one.
  const unleased = '(attribute_not_exists(linkLeaseUntil) OR linkLeaseUntil < :now)';
  const now = { ':now': Date.now() };
  return from.seq === 0
    ? put('audit-head', item, `attribute_not_exists(seq) AND ${unleased}`, { values: now })
    : put('audit-head', item, `seq = :seq AND ${unleased}`, { values: { ':seq': from.seq, ...now } });
}

function del(
  label: string,
  key: Record<string, string>,
  condition: string,
  expression: ConditionExpression = {},
): Action {
  return { label, item: { Delete: { TableName: '', Key: key, ...conditionOf(condition, expression) } } };
}

function check(label: string, key: Record<string, string>, condition: string): Action {
  return { label, item: { ConditionCheck: { TableName: '', Key: key, ConditionExpression: condition } } };
}

function withTable(item: TransactItem, table: string): TransactItem {
  if (item.Put) return { Put: { ...item.Put, TableName: table } };
  if (item.Update) return { Update: { ...item.Update, TableName: table } };
  if (item.ConditionCheck) return { ConditionCheck: { ...item.ConditionCheck, TableName: table } };
  if (item.Delete) return { Delete: { ...item.Delete, TableName: table } };
  return item;
}

/**
 * ADDs the org's usage change and takes it from the headroom in the same update; every increase is
 * conditional on the headroom covering it (`free >= requested`), so no read of the quota is needed.
 */
function usageUpdate(orgId: string, delta: Omit<Usage, 'snapshots'>, table: string): Action | undefined {
  const changed = (Object.entries(delta) as [keyof typeof delta, number][]).filter(
    ([, value]) => value !== 0,
  );
  if (changed.length === 0) return undefined;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const conditions = ['attribute_exists(PK)'];
  for (const [field, value] of changed) {
    names[`#${field}`] = field;
    names[`#free_${field}`] = `free_${field}`;
    values[`:${field}`] = value;
    values[`:free_${field}`] = -value;
    if (value > 0) conditions.push(`#free_${field} >= :${field}`);
  }
  return {
    label: 'usage',
    item: {
      Update: {
        TableName: table,
        Key: keyOf.usage(orgId),
        UpdateExpression: `ADD ${changed.map(([field]) => `#${field} :${field}, #free_${field} :free_${field}`).join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
  };
}

/**
 * The org's count of waiting sandboxes (queued or provisioning), kept beside its usage. An increase is
 * conditional on staying under `max`; a missing item (an org older than the count) starts at zero.
 */
function waitingUpdate(orgId: string, change: number, table: string, max?: number): Action {
  return {
    label: 'waiting',
    item: {
      Update: {
        TableName: table,
        Key: keyOf.waiting(orgId),
        UpdateExpression: 'ADD waiting :change',
        ...(change > 0 && max !== undefined
          ? {
              ConditionExpression: 'attribute_not_exists(waiting) OR waiting < :max',
              ExpressionAttributeValues: { ':change': change, ':max': max },
            }
          : { ExpressionAttributeValues: { ':change': change } }),
      },
    },
  };
}

/** Takes (+1, only while `free_snapshots` covers it) or gives back (-1) one of the org's maxSnapshots. */
function snapshotSlot(orgId: string, change: 1 | -1, table: string): Action {
  return {
    label: 'usage',
    item: {
      Update: {
        TableName: table,
        Key: keyOf.usage(orgId),
        UpdateExpression: 'ADD snapshots :change, free_snapshots :release',
        ...(change > 0 && { ConditionExpression: 'attribute_exists(PK) AND free_snapshots >= :change' }),
        ExpressionAttributeValues: { ':change': change, ':release': -change },
      },
    },
  };
}

/** ADDs to a pool's slot count; taking a slot is bounded by maxConcurrency when it has one. */
function poolUpdate(pool: string, change: number, limit: number, table: string): Action {
  const bounded = change > 0 && limit > 0;
  return {
    label: `pool:${pool}`,
    item: {
      Update: {
        TableName: table,
        Key: keyOf.poolUsage(pool),
        UpdateExpression: 'ADD active :change',
        ...(bounded && { ConditionExpression: 'attribute_not_exists(active) OR active <= :max' }),
        ExpressionAttributeValues: { ':change': change, ...(bounded && { ':max': limit - change }) },
      },
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
