import { DeleteCommand, type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEvent, AuditInput, ChainHead } from '../../audit/chain.ts';
import { type LedgerChange, ledgerChanges } from '../../budgets/billing.ts';
import type { Ledger } from '../../budgets/ledger.ts';
import { errors } from '../../errors.ts';
import { newId, newUlid } from '../../ids.ts';
import { exceededQuota, type Usage, usageDelta, usageLimits, zeroUsage } from '../../quotas/usage.ts';
import type { SandboxStatus } from '../../schemas/sandbox-status.ts';
import type { IdlePolicy } from '../../schemas/sandboxes.ts';
import type { Quota } from '../../schemas/tenancy.ts';
import { maxWebhooksPerOrg, type WebhookRecord, webhookRecordSchema } from '../../schemas/webhooks.ts';
import { decodeCursor } from '../cursor.ts';
import { idempotencyMismatch, quotaExceeded, waitingExceeded, webhooksExceeded } from '../errors.ts';
import {
  type CreateSandboxResult,
  dueKeyOf,
  type IdempotencyClaim,
  indexedStatuses,
  installationChain,
  isWaiting,
  type Page,
  type PageRequest,
  type PoolsState,
  type ReadAlong,
  type ReadAlongResult,
  type SandboxFilter,
  type SandboxPatch,
  type SnapshotSettlement,
  type Store,
  snapshotHoldsSlot,
  type UpdateSandboxOptions,
} from '../port.ts';
import {
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
import { AuditOutbox } from './audit-outbox.ts';
import {
  budgetActions,
  initLedger,
  type LedgerOwner,
  ledgerLabel,
  ledgerOwnersOf,
  ledgerUpdate,
  readLedger,
  refusal,
} from './budget-ledgers.ts';
import {
  indexKeyOf,
  keyOf,
  keysParent,
  orgPartition,
  orgsParent,
  queuedParent,
  sandboxItem,
  usageItem,
} from './items.ts';
import { tableKeys } from './table.ts';
import {
  type Action,
  afterSortKey,
  Canceled,
  check,
  type DynamoDbStoreStats,
  del,
  isConditionFailed,
  jitteredPause,
  onCanceled,
  put,
  TableClient,
} from './table-client.ts';
import { poolUpdate, snapshotSlot, usageUpdate, waitingUpdate } from './usage-updates.ts';

export type { DynamoDbStoreStats } from './table-client.ts';

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

/**
 * The store on one DynamoDB table (docs/store.md). Every change is one TransactWriteItems with its
 * conditions: the sandbox's status and version, the usage bounds computed in code (conditions cannot
 * add), the pool's slot bound, and the org's audit chain head.
 */
export class DynamoDbStore implements Store {
  readonly #table: string;
  readonly #now: () => Date;
  readonly #t: TableClient;
  readonly #audit: AuditOutbox;
  #installation: string | undefined;
  readonly stats: DynamoDbStoreStats = {
    transactions: 0,
    conflictRetries: 0,
    linkTransactions: 0,
    linkRetries: 0,
  };

  constructor(options: DynamoDbStoreOptions) {
    this.#table = options.tableName;
    this.#now = options.now ?? (() => new Date());
    this.#t = new TableClient(options.client, options.tableName, this.stats);
    this.#audit = new AuditOutbox(this.#t, this.stats, {
      now: this.#now,
      maxChainRetries: options.maxChainRetries ?? 25,
      linkInline: options.linkInline ?? true,
      onLinking: options.onLinking,
    });
  }

  async installation(): Promise<string> {
    if (this.#installation !== undefined) return this.#installation;
    const existing = await this.#t.get(keyOf.installation());
    if (existing !== undefined) return this.#rememberInstallation(existing);
    const id = newId('installation');
    try {
      await this.#t.call((doc) =>
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
      if (!isConditionFailed(error)) throw error;
      // Another cold start created it first: use theirs.
      return this.#rememberInstallation(await this.#t.get(keyOf.installation()));
    }
  }

  #rememberInstallation(item: Record<string, unknown> | undefined): string {
    const id = item?.id;
    if (typeof id !== 'string') throw new Error('the installation item has no id');
    this.#installation = id;
    return id;
  }

  async createOrg(org: OrgRecord, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(org.id, audit, () => [
        put(
          'org',
          { ...keyOf.org(org.id), GSI1PK: orgsParent, GSI1SK: org.id, ...org },
          'attribute_not_exists(PK)',
        ),
        put('usage', usageItem(org.id, zeroUsage, org.quota), 'attribute_not_exists(PK)'),
      ])
      .catch(onCanceled(() => errors.conflict(`org ${org.id} already exists`)));
  }

  async getOrg(id: string): Promise<OrgRecord | undefined> {
    return this.#t.getParsed(keyOf.org(id), orgRecordSchema);
  }

  async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
    return this.#t.queryPage(
      {
        IndexName: tableKeys.byParent.name,
        ...afterSortKey(
          tableKeys.byParent.partition,
          orgsParent,
          tableKeys.byParent.sort,
          decodeCursor(page.cursor),
        ),
      },
      page.limit,
      (item) => orgRecordSchema.parse(item),
      (org) => org.id,
    );
  }

  async createKey(key: KeyRecord, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(key.orgId, audit, () => [
        check('org', keyOf.org(key.orgId), 'attribute_exists(PK)'),
        put(
          'key',
          { ...keyOf.key(key.id), GSI1PK: keysParent(key.orgId), GSI1SK: key.id, ...key },
          'attribute_not_exists(PK)',
        ),
      ])
      .catch(
        onCanceled((failed) =>
          failed.has('org')
            ? errors.notFound('org', key.orgId)
            : errors.conflict(`key ${key.id} already exists`),
        ),
      );
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    return this.#t.getParsed(keyOf.key(id), keyRecordSchema);
  }

  async getKeyWith(
    keyId: string,
    along: ReadAlong,
  ): Promise<{ key: KeyRecord | undefined; along: ReadAlongResult }> {
    const [keyItem, result] = await this.#readWith(keyOf.key(keyId), along);
    return { key: keyItem === undefined ? undefined : keyRecordSchema.parse(keyItem), along: result };
  }

  async readAlong(along: ReadAlong): Promise<ReadAlongResult> {
    const [, result] = await this.#readWith(undefined, along);
    return result;
  }

  /** One BatchGetItem: `first` (if any) and what `along` asks for. */
  async #readWith(
    first: Record<string, string> | undefined,
    along: ReadAlong,
  ): Promise<[Record<string, unknown> | undefined, ReadAlongResult]> {
    const asked: [keyof ReadAlongResult, Record<string, string>][] = [];
    if (along.org === true) asked.push(['org', keyOf.org(along.orgId)]);
    if (along.sandboxId !== undefined) asked.push(['sandbox', keyOf.sandbox(along.orgId, along.sandboxId)]);
    if (along.waiting === true) asked.push(['waiting', keyOf.waiting(along.orgId)]);
    if (along.poolsVersion === true) asked.push(['poolsVersion', keyOf.poolsVersion()]);
    const keys = asked.map(([, key]) => key);
    const items = await this.#t.getMany(first === undefined ? keys : [first, ...keys]);
    const firstItem = first === undefined ? undefined : items.shift();
    const result: ReadAlongResult = {};
    asked.forEach(([name], index) => {
      const item = items[index];
      if (name === 'org') result.org = item === undefined ? null : orgRecordSchema.parse(item);
      if (name === 'sandbox') result.sandbox = item === undefined ? null : sandboxRecordSchema.parse(item);
      if (name === 'waiting') result.waiting = typeof item?.waiting === 'number' ? item.waiting : 0;
      if (name === 'poolsVersion')
        result.poolsVersion = typeof item?.version === 'string' ? item.version : null;
    });
    return [firstItem, result];
  }

  async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
    return this.#t.queryPage(
      {
        IndexName: tableKeys.byParent.name,
        ...afterSortKey(
          tableKeys.byParent.partition,
          keysParent(orgId),
          tableKeys.byParent.sort,
          decodeCursor(page.cursor),
        ),
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
      await this.#audit.write(key.orgId, audit, () => [
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
      await this.#audit.write(successor.orgId, audit, () => [
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
      const item = await this.#t.get(keyOf.org(orgId));
      if (item === undefined) throw errors.notFound('org', orgId);
      const current = orgRecordSchema.parse(item);
      const revision = typeof item.quotaRevision === 'number' ? item.quotaRevision : 0;
      // Headroom moves by the quota's change; usage itself is untouched, so no sandbox races this.
      const headroom = usageLimits
        .map(({ field, limit }) => ({ field, change: quota[limit] - current.quota[limit] }))
        .filter(({ change }) => change !== 0);
      try {
        await this.#audit.write(orgId, audit, () => [
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

  async setIdlePolicy(orgId: string, policy: IdlePolicy | null, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(orgId, audit, () => [
        {
          label: 'org',
          item: {
            Update: {
              TableName: this.#table,
              Key: keyOf.org(orgId),
              UpdateExpression: 'SET idlePolicy = :policy',
              ConditionExpression: 'attribute_exists(PK)',
              ExpressionAttributeValues: { ':policy': policy },
            },
          },
        },
      ])
      .catch(onCanceled(() => errors.notFound('org', orgId)));
  }

  async createWebhook(webhook: WebhookRecord, max: number, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(webhook.orgId, audit, () => [
        check('org', keyOf.org(webhook.orgId), 'attribute_exists(PK)'),
        {
          label: 'count',
          item: {
            Update: {
              TableName: this.#table,
              Key: keyOf.webhookCount(webhook.orgId),
              UpdateExpression: 'ADD webhooks :one',
              ConditionExpression: 'attribute_not_exists(webhooks) OR webhooks < :max',
              ExpressionAttributeValues: { ':one': 1, ':max': max },
            },
          },
        },
        put(
          'webhook',
          { ...keyOf.webhook(webhook.orgId, webhook.id), ...webhook },
          'attribute_not_exists(PK)',
        ),
      ])
      .catch(
        onCanceled((failed) =>
          failed.has('org')
            ? errors.notFound('org', webhook.orgId)
            : failed.has('count')
              ? webhooksExceeded(max)
              : errors.conflict(`webhook ${webhook.id} already exists`),
        ),
      );
  }

  async getWebhook(orgId: string, id: string): Promise<WebhookRecord | undefined> {
    return this.#t.getParsed(keyOf.webhook(orgId, id), webhookRecordSchema);
  }

  async listWebhooks(orgId: string): Promise<WebhookRecord[]> {
    const page = await this.#t.queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': orgPartition(orgId), ':prefix': 'WHK#' },
        ConsistentRead: true,
      },
      maxWebhooksPerOrg,
      (item) => webhookRecordSchema.parse(item),
      (webhook) => webhook.id,
    );
    return page.items;
  }

  async updateWebhookSecrets(
    current: WebhookRecord,
    secrets: WebhookRecord['secrets'],
    audit: AuditInput,
  ): Promise<void> {
    await this.#audit
      .write(current.orgId, audit, () => [
        put(
          'webhook',
          { ...keyOf.webhook(current.orgId, current.id), ...current, secrets },
          '#secrets = :secrets',
          {
            names: { '#secrets': 'secrets' },
            values: { ':secrets': current.secrets },
          },
        ),
      ])
      .catch(onCanceled(() => errors.conflict(`webhook ${current.id} changed since it was read`)));
  }

  async deleteWebhook(orgId: string, id: string, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(orgId, audit, () => [
        del('webhook', keyOf.webhook(orgId, id), 'attribute_exists(PK)'),
        {
          label: 'count',
          item: {
            Update: {
              TableName: this.#table,
              Key: keyOf.webhookCount(orgId),
              UpdateExpression: 'ADD webhooks :minus',
              ExpressionAttributeValues: { ':minus': -1 },
            },
          },
        },
      ])
      .catch(onCanceled(() => errors.notFound('webhook', id)));
  }

  async createProject(project: ProjectRecord, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(project.orgId, audit, () => [
        check('org', keyOf.org(project.orgId), 'attribute_exists(PK)'),
        put(
          'project',
          { ...keyOf.project(project.orgId, project.id), ...project },
          'attribute_not_exists(PK)',
        ),
      ])
      .catch(
        onCanceled((failed) =>
          failed.has('org')
            ? errors.notFound('org', project.orgId)
            : errors.conflict(`project ${project.id} already exists`),
        ),
      );
  }

  async getProject(orgId: string, id: string): Promise<ProjectRecord | undefined> {
    return this.#t.getParsed(keyOf.project(orgId, id), projectRecordSchema);
  }

  async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>> {
    const after = decodeCursor(page.cursor);
    return this.#t.queryPage(
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
    await this.#audit
      .write(installationChain, audit, () => [
        put(
          'pool',
          { ...keyOf.pool(pool.name), ...pool },
          mode === 'create' ? 'attribute_not_exists(PK)' : 'attribute_exists(PK)',
        ),
        poolsVersionBump(),
      ])
      .catch(
        onCanceled(() =>
          mode === 'create'
            ? errors.conflict(`pool ${pool.name} already exists`, { pool: pool.name })
            : errors.notFound('pool', pool.name),
        ),
      );
  }

  async getPool(name: string): Promise<PoolRecord | undefined> {
    return this.#t.getParsed(keyOf.pool(name), poolRecordSchema);
  }

  async listPools(): Promise<PoolRecord[]> {
    return this.#t.queryAll(keyOf.pool('').PK, 'POOL#', (item) => poolRecordSchema.parse(item));
  }

  async deletePool(name: string, audit: AuditInput): Promise<void> {
    await this.#audit
      .write(installationChain, audit, () => [
        del('pool', keyOf.pool(name), 'attribute_exists(PK)'),
        del('pool-view', keyOf.poolView(name), always),
        del('pool-down', keyOf.poolDown(name), always),
        poolsVersionBump(),
      ])
      .catch(onCanceled(() => errors.notFound('pool', name)));
  }

  async putPoolView(view: PoolView): Promise<void> {
    // The down mark is its own item: a probe's view never overwrites a mark made while it ran.
    const { downSince: _since, downReason: _reason, ...probed } = view;
    await this.#transactBumping([put('pool-view', { ...keyOf.poolView(view.pool), ...probed }, always)]);
  }

  /**
   * A write to the pools' partition with its version bump. Writers from many containers (probes, down
   * marks) meet on the version item: a transaction that lost to another is run again.
   */
  async #transactBumping(actions: Action[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#t.transact([...actions, poolsVersionBump()]);
        return;
      } catch (error) {
        const conflict =
          error instanceof Canceled &&
          error.failed.some((f) => f.code === 'TransactionConflict') &&
          !error.failed.some((f) => f.code === 'ConditionalCheckFailed');
        if (!conflict || attempt >= 5) throw error;
        await jitteredPause(attempt, 10, 200);
      }
    }
  }

  async markPoolDown(pool: string, at: string, reason: string): Promise<void> {
    try {
      await this.#transactBumping([
        // Marks only move forward: an older one arriving late does not hide a newer one.
        put(
          'pool-down',
          { ...keyOf.poolDown(pool), pool, at, reason },
          'attribute_not_exists(PK) OR #at < :at',
          {
            names: { '#at': 'at' },
            values: { ':at': at },
          },
        ),
      ]);
    } catch (error) {
      const older =
        error instanceof Canceled &&
        error.failed.some((f) => f.label === 'pool-down' && f.code === 'ConditionalCheckFailed');
      if (!older) throw error;
    }
  }

  async listPoolViews(): Promise<PoolView[]> {
    const items = await this.#t.queryAll(keyOf.poolView('').PK, 'VIEW', (item) => item);
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
    const item = await this.#t.get(keyOf.policy());
    return item === undefined ? undefined : policyOf(item);
  }

  async putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void> {
    await this.#audit.write(installationChain, audit, () => [
      put('policy', { ...keyOf.policy(), ...policy }, 'attribute_exists(PK) OR attribute_not_exists(PK)'),
      poolsVersionBump(),
    ]);
  }

  async readPools(): Promise<PoolsState> {
    const items = await this.#t.queryAll(keyOf.pool('').PK, '', (item) => item);
    const state: PoolsState = { pools: [], views: [], policy: undefined, version: null };
    const marks = new Map<string, PoolDownMark>();
    for (const item of items) {
      const sort = String(item.SK);
      if (sort.startsWith('POOL#')) state.pools.push(poolRecordSchema.parse(item));
      else if (sort.startsWith('VIEWDOWN#')) {
        const mark = poolDownMarkSchema.parse(item);
        marks.set(mark.pool, mark);
      } else if (sort.startsWith('VIEW#')) state.views.push(poolViewSchema.parse(item));
      else if (sort === keyOf.policy().SK) state.policy = policyOf(item);
      else if (sort === keyOf.poolsVersion().SK && typeof item.version === 'string')
        state.version = item.version;
    }
    state.views = withDownMarks(state.views, marks);
    return state;
  }

  async setBudget(
    orgId: string,
    projectId: string | null,
    monthlyMicros: number | null,
    months: string[],
    audit: AuditInput,
  ): Promise<void> {
    await this.#audit
      .write(orgId, audit, () => budgetActions({ orgId, projectId }, monthlyMicros, months))
      .catch(
        onCanceled((failed) =>
          failed.has('owner')
            ? projectId === null
              ? errors.notFound('org', orgId)
              : errors.notFound('project', projectId)
            : errors.conflict('the budget changed while it was being set; try again'),
        ),
      );
  }

  async getLedger(orgId: string, projectId: string | null, month: string): Promise<Ledger> {
    const { reserved, spent } = await readLedger(this.#t, { orgId, projectId }, month);
    return { reserved, spent };
  }

  async getUsage(orgId: string): Promise<Usage> {
    const item = await this.#t.get(keyOf.usage(orgId));
    return item === undefined ? { ...zeroUsage } : usageSchema.parse(item);
  }

  async getPoolUsage(pool: string): Promise<number> {
    const active = (await this.#t.get(keyOf.poolUsage(pool)))?.active;
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
      await this.#audit.write(sandbox.orgId, audit, () => [
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
    const record = await this.#t.get(keyOf.idempotency(orgId, idempotency.key));
    if (record?.requestHash !== idempotency.requestHash) throw idempotencyMismatch(idempotency.key);
    const first =
      typeof record.sandboxId === 'string' ? await this.getSandbox(orgId, record.sandboxId) : undefined;
    if (first === undefined)
      throw errors.conflict(`the sandbox of Idempotency-Key ${idempotency.key} is gone`);
    return { sandbox: first, replayed: true };
  }

  async getSandbox(orgId: string, id: string): Promise<SandboxRecord | undefined> {
    return this.#t.getParsed(keyOf.sandbox(orgId, id), sandboxRecordSchema);
  }

  async listQueued(orgId: string, limit: number): Promise<SandboxRecord[]> {
    const page = await this.#t.queryPage(
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
  }

  async listSandboxes(orgId: string, filter: SandboxFilter, page: PageRequest): Promise<Page<SandboxRecord>> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':pk': orgPartition(orgId), ':prefix': 'SBX#' };
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
    return this.#t.queryPage(
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
    return this.#t.queryPage(
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
    return this.#t.queryPage(
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
  }

  async findSandbox(id: string): Promise<SandboxRecord | undefined> {
    const orgId = (await this.#t.get(keyOf.sandboxPointer(id)))?.orgId;
    return typeof orgId === 'string' ? this.getSandbox(orgId, id) : undefined;
  }

  async acquireLease(name: string, owner: string, until: string, now: string): Promise<boolean> {
    try {
      await this.#t.call((doc) =>
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
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    try {
      await this.#t.call((doc) =>
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
      if (!isConditionFailed(error)) throw error;
    }
  }

  async updateSandbox(
    current: SandboxRecord,
    patch: SandboxPatch,
    options: UpdateSandboxOptions = {},
  ): Promise<SandboxRecord> {
    const next: SandboxRecord = { ...current, ...patch, version: current.version + 1 };
    const budgets = ledgerChanges(current.billing, next.billing).flatMap((change) =>
      ledgerOwnersOf(next).map((owner) => ({ owner, change })),
    );
    // A month's first charge to a budget finds its ledger without headroom: give it one, then again.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#writeSandbox(current, next, budgets, options);
      } catch (error) {
        if (!(error instanceof Canceled) || attempt >= 2) throw error;
        const failed = budgets.find(({ owner, change }) =>
          error.failed.some((f) => f.label === ledgerLabel(owner, change.month)),
        );
        if (failed === undefined) throw error;
        const ledger = await readLedger(this.#t, failed.owner, failed.change.month);
        if (ledger.initialized) throw await refusal(this.#t, failed.owner, failed.change);
        await initLedger(this.#t, failed.owner, failed.change.month);
      }
    }
  }

  async #writeSandbox(
    current: SandboxRecord,
    next: SandboxRecord,
    budgets: { owner: LedgerOwner; change: LedgerChange }[],
    options: UpdateSandboxOptions,
  ): Promise<SandboxRecord> {
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
      for (const { owner, change } of budgets) list.push(ledgerUpdate(owner, change));
      return list;
    };
    try {
      await this.#audit.write(current.orgId, options.audit, actions);
      return next;
    } catch (error) {
      if (!(error instanceof Canceled)) throw error;
      const labels = new Set(error.failed.map((f) => f.label));
      // A budget's refusal is its caller's to explain (it may only need its month's headroom).
      if ([...labels].some((label) => label.startsWith('budget:')) && !labels.has('sandbox')) throw error;
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

  async touchSandbox(orgId: string, id: string, at: string): Promise<string | undefined> {
    try {
      const answer = await this.#t.call((doc) =>
        doc.send(
          new UpdateCommand({
            TableName: this.#table,
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
  }

  async lastActivity(orgId: string, id: string): Promise<string | undefined> {
    const at = (await this.#t.get(keyOf.activity(orgId, id)))?.at;
    return typeof at === 'string' ? at : undefined;
  }

  async createSnapshot(snapshot: SnapshotRecord, audit: AuditInput): Promise<void> {
    try {
      await this.#audit.write(snapshot.orgId, audit, () => [
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
    return this.#t.getParsed(keyOf.snapshot(orgId, id), snapshotRecordSchema);
  }

  async listSnapshots(orgId: string, page: PageRequest): Promise<Page<SnapshotRecord>> {
    const after = decodeCursor(page.cursor);
    return this.#t.queryPage(
      {
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
        ExpressionAttributeValues: { ':pk': orgPartition(orgId), ':prefix': 'SNP#' },
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
      await this.#audit.write(current.orgId, audit, () => [
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
      await this.#audit.write(orgId, audit, () => [
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

  appendAudit(orgId: string, audit: AuditInput): Promise<AuditEvent> {
    return this.#audit.appendAudit(orgId, audit);
  }

  auditHead(orgId: string): Promise<ChainHead> {
    return this.#audit.auditHead(orgId);
  }

  listAudit(orgId: string, page: PageRequest): Promise<Page<AuditEvent>> {
    return this.#audit.listAudit(orgId, page);
  }

  /** Audit records of an org not yet linked into its chain (for operators and tests). */
  outboxSize(orgId: string): Promise<number> {
    return this.#audit.outboxSize(orgId);
  }

  /** Resolves once the links this handle started (inline after writes) have ended. */
  linkingIdle(): Promise<void> {
    return this.#audit.idle();
  }

  /** `pending`: a record was just written (what a change's inline link says), so no first look is taken. */
  linkAudit(orgId: string, options: { pending?: boolean } = {}): Promise<void> {
    return this.#audit.linkAudit(orgId, options);
  }
}

/** A new pools version, written in the same transaction as the pool or policy change it stands for. */
function poolsVersionBump() {
  return put('pools-version', { ...keyOf.poolsVersion(), version: newUlid() }, always);
}

/** A condition every item meets: transaction actions take one. */
const always = 'attribute_exists(PK) OR attribute_not_exists(PK)';

function policyOf(item: Record<string, unknown>): PlacementPolicy {
  return placementPolicySchema.parse({
    allowExternal: item.allowExternal,
    externalPools: item.externalPools,
  });
}
