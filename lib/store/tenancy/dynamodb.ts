import type { AuditInput } from '../../audit/chain.ts';
import type { Ledger } from '../../budgets/ledger.ts';
import { errors } from '../../errors.ts';
import { type Usage, usageLimits, zeroUsage } from '../../quotas/usage.ts';
import type { Quota } from '../../schemas/tenancy-parts.ts';
import { decodeCursor } from '../cursor.ts';
import { budgetActions, readLedger } from '../dynamodb/budget-ledgers.ts';
import { type DynamoDbContext, orgOf, usageOf } from '../dynamodb/context.ts';
import {
  keyOf,
  keysParent,
  orgsParent,
  sortPrefix,
  usageItem,
  waitingOnPoolsShards,
} from '../dynamodb/items.ts';
import { tableKeys } from '../dynamodb/table.ts';
import { afterSortKey, Canceled, check, onCanceled, put } from '../dynamodb/table-client.ts';
import type { Page, PageRequest } from '../page.ts';
import {
  type KeyRecord,
  keyRecordSchema,
  type OrgRecord,
  orgRecordSchema,
  type ProjectRecord,
  projectRecordSchema,
  sandboxRecordSchema,
} from '../records.ts';
import type { OrgDefault, ReadAlong, ReadAlongResult, TenancyStore } from './port.ts';

/** The tenancy aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbTenancy(c: DynamoDbContext): TenancyStore {
  /** One BatchGetItem: `first` (if any) and what `along` asks for. */
  async function readWith(
    first: Record<string, string> | undefined,
    along: ReadAlong,
  ): Promise<[Record<string, unknown> | undefined, ReadAlongResult]> {
    const asked: [keyof ReadAlongResult, Record<string, string>][] = [];
    if (along.org === true) asked.push(['org', keyOf.org(along.orgId)]);
    if (along.sandboxId !== undefined) asked.push(['sandbox', keyOf.sandbox(along.orgId, along.sandboxId)]);
    if (along.waiting === true) asked.push(['waiting', keyOf.waiting(along.orgId)]);
    if (along.waitingOnPools === true)
      for (let shard = 0; shard < waitingOnPoolsShards; shard++)
        asked.push(['waitingOnPools', keyOf.waitingOnPools(shard)]);
    if (along.poolsVersion === true) asked.push(['poolsVersion', keyOf.poolsVersion()]);
    const keys = asked.map(([, key]) => key);
    const items = await c.t.getMany(first === undefined ? keys : [first, ...keys]);
    const firstItem = first === undefined ? undefined : items.shift();
    const result: ReadAlongResult = {};
    // A count's item is absent until its first change: zero.
    const countOf = (item: Record<string, unknown> | undefined) =>
      typeof item?.waiting === 'number' ? item.waiting : 0;
    asked.forEach(([name], index) => {
      const item = items[index];
      if (name === 'org') result.org = item === undefined ? null : orgRecordSchema.parse(item);
      if (name === 'sandbox') result.sandbox = item === undefined ? null : sandboxRecordSchema.parse(item);
      if (name === 'waiting') result.waiting = countOf(item);
      if (name === 'waitingOnPools') result.waitingOnPools = (result.waitingOnPools ?? 0) + countOf(item);
      if (name === 'poolsVersion')
        result.poolsVersion = typeof item?.version === 'string' ? item.version : null;
    });
    return [firstItem, result];
  }

  const part: TenancyStore = {
    async createOrg(org: OrgRecord, audit: AuditInput): Promise<void> {
      await c.audit
        .write(org.id, audit, () => [
          put(
            'org',
            { ...keyOf.org(org.id), GSI1PK: orgsParent, GSI1SK: org.id, ...org },
            'attribute_not_exists(PK)',
          ),
          put('usage', usageItem(org.id, zeroUsage, org.quota), 'attribute_not_exists(PK)'),
        ])
        .catch(onCanceled(() => errors.conflict(`org ${org.id} already exists`)));
    },

    getOrg(id: string): Promise<OrgRecord | undefined> {
      return orgOf(c, id);
    },

    async listOrgs(page: PageRequest): Promise<Page<OrgRecord>> {
      return c.t.queryPage(
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
    },

    async createKey(key: KeyRecord, audit: AuditInput): Promise<void> {
      await c.audit
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
    },

    async getKey(id: string): Promise<KeyRecord | undefined> {
      return c.t.getParsed(keyOf.key(id), keyRecordSchema);
    },

    async getKeyWith(
      keyId: string,
      along: ReadAlong,
    ): Promise<{ key: KeyRecord | undefined; along: ReadAlongResult }> {
      const [keyItem, result] = await readWith(keyOf.key(keyId), along);
      return { key: keyItem === undefined ? undefined : keyRecordSchema.parse(keyItem), along: result };
    },

    async readAlong(along: ReadAlong): Promise<ReadAlongResult> {
      const [, result] = await readWith(undefined, along);
      return result;
    },

    async listKeys(orgId: string, page: PageRequest): Promise<Page<KeyRecord>> {
      return c.t.queryPage(
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
    },

    async revokeKey(id: string, at: string, audit: AuditInput): Promise<KeyRecord> {
      const key = await part.getKey(id);
      if (key === undefined) throw errors.notFound('key', id);
      if (key.revokedAt !== null) return key;
      try {
        await c.audit.write(key.orgId, audit, () => [
          {
            label: 'key',
            item: {
              Update: {
                TableName: c.table,
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
      const revoked = await part.getKey(id);
      if (revoked === undefined) throw errors.notFound('key', id);
      return revoked;
    },

    async rotateKey(oldId: string, successor: KeyRecord, at: string, audit: AuditInput): Promise<void> {
      try {
        await c.audit.write(successor.orgId, audit, () => [
          {
            label: 'old-key',
            item: {
              Update: {
                TableName: c.table,
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
          const old = await part.getKey(oldId);
          if (old === undefined) throw errors.notFound('key', oldId);
          throw errors.invalidState(`key ${oldId} is revoked; create a new key instead`);
        }
        throw errors.conflict(`key ${successor.id} already exists`);
      }
    },

    async setQuota(orgId: string, quota: Quota, audit: AuditInput): Promise<OrgRecord> {
      for (let attempt = 0; attempt < 10; attempt++) {
        const item = await c.t.get(keyOf.org(orgId));
        if (item === undefined) throw errors.notFound('org', orgId);
        const current = orgRecordSchema.parse(item);
        const revision = typeof item.quotaRevision === 'number' ? item.quotaRevision : 0;
        // Headroom moves by the quota's change; usage itself is untouched, so no sandbox races this.
        const headroom = usageLimits
          .map(({ field, limit }) => ({ field, change: quota[limit] - current.quota[limit] }))
          .filter(({ change }) => change !== 0);
        try {
          await c.audit.write(orgId, audit, () => [
            {
              label: 'org',
              item: {
                Update: {
                  TableName: c.table,
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
                        TableName: c.table,
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
    },

    async setOrgDefault(orgId: string, change: OrgDefault, audit: AuditInput): Promise<void> {
      await c.audit
        .write(orgId, audit, () => [
          {
            label: 'org',
            item: {
              Update: {
                TableName: c.table,
                Key: keyOf.org(orgId),
                UpdateExpression: 'SET #field = :value',
                ConditionExpression: 'attribute_exists(PK)',
                ExpressionAttributeNames: { '#field': change.field },
                ExpressionAttributeValues: { ':value': change.value },
              },
            },
          },
        ])
        .catch(onCanceled(() => errors.notFound('org', orgId)));
    },

    async createProject(project: ProjectRecord, audit: AuditInput): Promise<void> {
      await c.audit
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
    },

    async getProject(orgId: string, id: string): Promise<ProjectRecord | undefined> {
      return c.t.getParsed(keyOf.project(orgId, id), projectRecordSchema);
    },

    async listProjects(orgId: string, page: PageRequest): Promise<Page<ProjectRecord>> {
      const after = decodeCursor(page.cursor);
      return c.t.queryPage(
        {
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :from AND :to',
          ExpressionAttributeValues: {
            ':pk': keyOf.org(orgId).PK,
            ':from': after === undefined ? sortPrefix.projects : `${keyOf.project(orgId, after).SK}#`,
            ':to': `${sortPrefix.projects}~`,
          },
        },
        page.limit,
        (item) => projectRecordSchema.parse(item),
        (project) => project.id,
      );
    },

    getUsage(orgId: string): Promise<Usage> {
      return usageOf(c, orgId);
    },

    async setBudget(
      orgId: string,
      projectId: string | null,
      monthlyMicros: number | null,
      months: string[],
      audit: AuditInput,
    ): Promise<void> {
      await c.audit
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
    },

    async getLedger(orgId: string, projectId: string | null, month: string): Promise<Ledger> {
      const { reserved, spent } = await readLedger(c.t, { orgId, projectId }, month);
      return { reserved, spent };
    },
  };
  return part;
}
