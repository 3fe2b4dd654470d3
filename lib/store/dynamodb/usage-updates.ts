import type { Usage } from '../../quotas/usage.ts';
import { keyOf, waitingOnPoolsShardOf } from './items.ts';
import type { Action } from './table-client.ts';

/**
 * ADDs the org's usage change and takes it from the headroom in the same update; every increase is
 * conditional on the headroom covering it (`free >= requested`), so no read of the quota is needed.
 */
export function usageUpdate(
  orgId: string,
  delta: Omit<Usage, 'snapshots'>,
  table: string,
): Action | undefined {
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
 * A count of waiting sandboxes moved by `change`: the org's (queued or provisioning, kept beside its
 * usage), or a shard of the count waiting on the pools. An increase is conditional on staying under `max`;
 * a missing item (an installation older than the count) starts at zero.
 */
function countUpdate(
  label: string,
  key: Record<string, string>,
  change: number,
  table: string,
  max?: number,
): Action {
  return {
    label,
    item: {
      Update: {
        TableName: table,
        Key: key,
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

/** The org's count of waiting sandboxes, bounded by `max` (its maxQueued) when given. */
export function waitingUpdate(orgId: string, change: number, table: string, max?: number): Action {
  return countUpdate('waiting', keyOf.waiting(orgId), change, table, max);
}

/** The count of sandboxes waiting on the pools, in the shard of the sandbox that starts or stops waiting. */
export function waitingOnPoolsUpdate(sandboxId: string, change: number, table: string): Action {
  return countUpdate('waitingOnPools', keyOf.waitingOnPools(waitingOnPoolsShardOf(sandboxId)), change, table);
}

/** Takes (+1, only while `free_snapshots` covers it) or gives back (-1) one of the org's maxSnapshots. */
export function snapshotSlot(orgId: string, change: 1 | -1, table: string): Action {
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
export function poolUpdate(pool: string, change: number, limit: number, table: string): Action {
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
