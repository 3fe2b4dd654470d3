import type { AuditEvent } from '../../audit/chain.ts';
import { type Usage, usageLimits } from '../../quotas/usage.ts';
import type { Quota } from '../../schemas/tenancy-parts.ts';
import type { SandboxRecord } from '../records.ts';
import { dueKeyOf, indexedStatuses } from '../sandboxes/status-index.ts';
import { tableKeys } from './table.ts';

/** Key builders: every item's key is prefixed by its owner so tenant reads are Queries. */
export const keyOf = {
  installation: () => ({ PK: 'META', SK: 'INSTALLATION' }),
  org: (orgId: string) => ({ PK: `ORG#${orgId}`, SK: 'ORG' }),
  usage: (orgId: string) => ({ PK: `ORG#${orgId}`, SK: 'USAGE' }),
  /** How many of the org's sandboxes wait (queued or provisioning): what maxQueued bounds. */
  waiting: (orgId: string) => ({ PK: `ORG#${orgId}`, SK: 'WAITING' }),
  /**
   * One shard of the installation's count of sandboxes waiting on the pools (any org): a sandbox counts
   * in the shard of its id, so the shards spread the writes of many waiters.
   */
  waitingOnPools: (shard: number) => ({ PK: `WAITINGONPOOLS#${shard}`, SK: 'COUNT' }),
  /** A month's ledger of the org's budget, or of one of its projects' (lib/store/dynamodb/budget-ledgers.ts). */
  budgetLedger: (orgId: string, projectId: string | null, month: string) => ({
    PK: `ORG#${orgId}`,
    SK: projectId === null ? `BUDGET#${month}` : `BUDGET#${month}#${projectId}`,
  }),
  chainHead: (orgId: string) => ({ PK: `ORG#${orgId}`, SK: 'AUDITHEAD' }),
  auditEvent: (orgId: string, seq: number) => ({ PK: `ORG#${orgId}#AUDIT`, SK: `EVT#${seqKey(seq)}` }),
  key: (keyId: string) => ({ PK: `KEY#${keyId}`, SK: 'KEY' }),
  sandbox: (orgId: string, sandboxId: string) => ({ PK: `ORG#${orgId}`, SK: `SBX#${sandboxId}` }),
  /** A sandbox's last exec, file or port call, for its idle policy: apart from the record, unversioned. */
  activity: (orgId: string, sandboxId: string) => ({ PK: `ORG#${orgId}`, SK: `ACT#${sandboxId}` }),
  webhook: (orgId: string, webhookId: string) => ({ PK: `ORG#${orgId}`, SK: `WHK#${webhookId}` }),
  /** How many webhook endpoints the org has: what maxWebhooksPerOrg bounds. */
  webhookCount: (orgId: string) => ({ PK: `ORG#${orgId}`, SK: 'WEBHOOKS' }),
  /** A delivery's record, in a partition of the org's deliveries apart from its other items (sortKey: deliverySortKey). */
  webhookDelivery: (orgId: string, sortKey: string) => ({
    PK: `ORG#${orgId}#DELIVERIES`,
    SK: `WHD#${sortKey}`,
  }),
  idempotency: (orgId: string, key: string) => ({ PK: `ORG#${orgId}`, SK: `IDEM#${key}` }),
  snapshot: (orgId: string, snapshotId: string) => ({ PK: `ORG#${orgId}`, SK: `SNP#${snapshotId}` }),
  poolUsage: (pool: string) => ({ PK: `POOL#${pool}`, SK: 'USAGE' }),
  /** A pool's warm instances share one small partition: listing them is one Query. */
  warm: (pool: string, id: string) => ({ PK: warmPartition(pool), SK: `WARM#${id}` }),
  project: (orgId: string, projectId: string) => ({ PK: `ORG#${orgId}`, SK: `PRJ#${projectId}` }),
  /** Runtime pools and their refreshed views share one small partition: listing them is one Query. */
  pool: (name: string) => ({ PK: 'POOLS', SK: `POOL#${name}` }),
  poolView: (name: string) => ({ PK: 'POOLS', SK: `VIEW#${name}` }),
  /** A pool marked down by an adapter error; beside the views so one Query reads both. */
  poolDown: (name: string) => ({ PK: 'POOLS', SK: `VIEWDOWN#${name}` }),
  /** The placement policy, beside the pools: one Query reads pools, views, marks, policy and version. */
  policy: () => ({ PK: 'POOLS', SK: 'POLICY' }),
  /** Changes with every pool or policy change: a container holding it knows its pools are current. */
  poolsVersion: () => ({ PK: 'POOLS', SK: 'VERSION' }),
  /** Which org a sandbox id belongs to, for lookups by id alone (the reconciler). */
  sandboxPointer: (sandboxId: string) => ({ PK: `SBXID#${sandboxId}`, SK: 'SBXID' }),
  lease: (name: string) => ({ PK: `LEASE#${name}`, SK: 'LEASE' }),
  /** Audit records waiting to be linked into the org's chain, in write order. */
  outbox: (orgId: string, id: string) => ({ PK: `ORG#${orgId}#OUTBOX`, SK: id }),
};

/** How many shards the count of sandboxes waiting on the pools has: all are read in one BatchGetItem. */
export const waitingOnPoolsShards = 4;

/** The shard a sandbox counts in while it waits on the pools. */
export function waitingOnPoolsShardOf(sandboxId: string): number {
  let hash = 0;
  for (const char of sandboxId) hash = (hash * 31 + char.charCodeAt(0)) % 65_521;
  return hash % waitingOnPoolsShards;
}

export const orgsParent = 'ORGS';
/** The org's queued sandboxes in the by-parent index (sparse): waking waiters reads them alone. */
export const queuedParent = (orgId: string) => `ORG#${orgId}#QUEUED`;
export const keysParent = (orgId: string) => `ORG#${orgId}#KEYS`;

/** The partition of a pool's warm instances (lib/store/warm/). */
export const warmPartition = (pool: string) => `WARM#${pool}`;

/** An org's own partition (its sandboxes, snapshots, projects, usage...): queried with a sort-key prefix. */
export const orgPartition = (orgId: string) => `ORG#${orgId}`;

/**
 * The sort-key prefixes listings query by, each from its key function (the key with an empty id), so a
 * prefix is written once, where the key is: a renamed key cannot leave a query reading the old one.
 */
export const sortPrefix = {
  sandboxes: keyOf.sandbox('', '').SK,
  snapshots: keyOf.snapshot('', '').SK,
  webhooks: keyOf.webhook('', '').SK,
  projects: keyOf.project('', '').SK,
  warm: keyOf.warm('', '').SK,
  pools: keyOf.pool('').SK,
  poolViews: keyOf.poolView('').SK,
  poolDownMarks: keyOf.poolDown('').SK,
};

/** What two prefixes begin with alike: one Query that reads the items of both. */
export function commonPrefix(a: string, b: string): string {
  let length = 0;
  while (length < a.length && a[length] === b[length]) length++;
  return a.slice(0, length);
}

/** The index partitions of live sandboxes: by status (the sweep) and by pool (the reconciler). */
export const indexKeyOf = {
  byStatus: (status: string) => `STATUS#${status}`,
  byPool: (pool: string) => `POOL#${pool}`,
};

/** Zero-padded so string order is numeric order. */
export function seqKey(seq: number): string {
  return String(seq).padStart(12, '0');
}

/** A sandbox record as stored: the record's fields plus its keys and sparse index keys. */
export function sandboxItem(record: SandboxRecord): Record<string, unknown> {
  const live = indexedStatuses.has(record.status);
  return {
    ...record,
    ...keyOf.sandbox(record.orgId, record.id),
    ...(live && {
      [tableKeys.byStatus.partition]: indexKeyOf.byStatus(record.status),
      [tableKeys.byStatus.sort]: dueKeyOf(record),
    }),
    ...(record.status === 'queued' && {
      [tableKeys.byParent.partition]: queuedParent(record.orgId),
      [tableKeys.byParent.sort]: dueKeyOf(record),
    }),
    ...(live &&
      record.pool !== null && {
        [tableKeys.byPool.partition]: indexKeyOf.byPool(record.pool),
        [tableKeys.byPool.sort]: record.id,
      }),
  };
}

export function auditItem(event: AuditEvent): Record<string, unknown> {
  return { ...event, ...keyOf.auditEvent(event.orgId, event.seq) };
}

/**
 * An org's usage item: what is in use and, per quota, what is still free. Conditions can compare but
 * not add, so activation checks `free >= requested` on this one item and never reads the quota.
 */
export function usageItem(orgId: string, usage: Usage, quota: Quota): Record<string, unknown> {
  return {
    ...keyOf.usage(orgId),
    ...usage,
    ...Object.fromEntries(
      usageLimits.map(({ field, limit }) => [`free_${field}`, quota[limit] - usage[field]]),
    ),
  };
}
