import type { AuditInput } from '../../audit/chain.ts';
import { errors } from '../../errors.ts';
import { newUlid } from '../../ids.ts';
import { installationChain } from '../audit/port.ts';
import type { DynamoDbContext } from '../dynamodb/context.ts';
import { commonPrefix, keyOf, sortPrefix } from '../dynamodb/items.ts';
import { type Action, Canceled, del, jitteredPause, onCanceled, put } from '../dynamodb/table-client.ts';
import {
  type PlacementPolicy,
  type PoolDownMark,
  type PoolRecord,
  type PoolView,
  placementPolicySchema,
  poolDownMarkSchema,
  poolRecordSchema,
  poolViewSchema,
  withDownMarks,
} from '../records.ts';
import type { PoolStore, PoolsState } from './port.ts';

/** The pools aggregate on the one DynamoDB table (docs/store.md). */
export function dynamoDbPools(c: DynamoDbContext): PoolStore {
  /**
   * A write to the pools' partition with its version bump. Writers from many containers (probes, down
   * marks) meet on the version item: a transaction that lost to another is run again.
   */
  async function transactBumping(actions: Action[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await c.t.transact([...actions, poolsVersionBump()]);
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

  const part: PoolStore = {
    async putPool(pool: PoolRecord, mode: 'create' | 'replace', audit: AuditInput): Promise<void> {
      await c.audit
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
    },

    async getPool(name: string): Promise<PoolRecord | undefined> {
      return c.t.getParsed(keyOf.pool(name), poolRecordSchema);
    },

    async listPools(): Promise<PoolRecord[]> {
      return c.t.queryAll(keyOf.pool('').PK, sortPrefix.pools, (item) => poolRecordSchema.parse(item));
    },

    async deletePool(name: string, audit: AuditInput): Promise<void> {
      await c.audit
        .write(installationChain, audit, () => [
          del('pool', keyOf.pool(name), 'attribute_exists(PK)'),
          del('pool-view', keyOf.poolView(name), always),
          del('pool-down', keyOf.poolDown(name), always),
          poolsVersionBump(),
        ])
        .catch(onCanceled(() => errors.notFound('pool', name)));
    },

    async putPoolView(view: PoolView): Promise<void> {
      // The down mark is its own item: a probe's view never overwrites a mark made while it ran.
      const { downSince: _since, downReason: _reason, ...probed } = view;
      await transactBumping([put('pool-view', { ...keyOf.poolView(view.pool), ...probed }, always)]);
    },

    async markPoolDown(pool: string, at: string, reason: string): Promise<void> {
      try {
        await transactBumping([
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
    },

    async listPoolViews(): Promise<PoolView[]> {
      // Both the views (VIEW#) and the down marks (VIEWDOWN#): what their prefixes have in common.
      const items = await c.t.queryAll(
        keyOf.poolView('').PK,
        commonPrefix(sortPrefix.poolViews, sortPrefix.poolDownMarks),
        (item) => item,
      );
      const marks = new Map<string, PoolDownMark>();
      const views: PoolView[] = [];
      for (const item of items) {
        if (String(item.SK).startsWith(sortPrefix.poolDownMarks)) {
          const mark = poolDownMarkSchema.parse(item);
          marks.set(mark.pool, mark);
        } else views.push(poolViewSchema.parse(item));
      }
      return withDownMarks(views, marks);
    },

    async getPolicy(): Promise<PlacementPolicy | undefined> {
      const item = await c.t.get(keyOf.policy());
      return item === undefined ? undefined : policyOf(item);
    },

    async putPolicy(policy: PlacementPolicy, audit: AuditInput): Promise<void> {
      await c.audit.write(installationChain, audit, () => [
        put('policy', { ...keyOf.policy(), ...policy }, 'attribute_exists(PK) OR attribute_not_exists(PK)'),
        poolsVersionBump(),
      ]);
    },

    async readPools(): Promise<PoolsState> {
      const items = await c.t.queryAll(keyOf.pool('').PK, '', (item) => item);
      const state: PoolsState = { pools: [], views: [], policy: undefined, version: null };
      const marks = new Map<string, PoolDownMark>();
      for (const item of items) {
        const sort = String(item.SK);
        if (sort.startsWith(sortPrefix.pools)) state.pools.push(poolRecordSchema.parse(item));
        else if (sort.startsWith(sortPrefix.poolDownMarks)) {
          const mark = poolDownMarkSchema.parse(item);
          marks.set(mark.pool, mark);
        } else if (sort.startsWith(sortPrefix.poolViews)) state.views.push(poolViewSchema.parse(item));
        else if (sort === keyOf.policy().SK) state.policy = policyOf(item);
        else if (sort === keyOf.poolsVersion().SK && typeof item.version === 'string')
          state.version = item.version;
      }
      state.views = withDownMarks(state.views, marks);
      return state;
    },

    async getPoolUsage(pool: string): Promise<number> {
      const active = (await c.t.get(keyOf.poolUsage(pool)))?.active;
      return typeof active === 'number' ? active : 0;
    },
  };
  return part;
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
