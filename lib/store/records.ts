import { sandboxBillingSchema } from '../budgets/billing.ts';
import { poolConfigSchema } from '../config.ts';
import { networkPolicySchema } from '../network/policy.ts';
import {
  idlePolicySchema,
  placementDecisionSchema,
  resourcesSchema,
  sandboxIdleSchema,
  sandboxOperationSchema,
  sandboxWarmSchema,
  snapshotStatuses,
} from '../schemas/sandbox-parts.ts';
import { sandboxStatuses, waitReasons } from '../schemas/sandbox-status.ts';
import { keyRoles, quotaSchema } from '../schemas/tenancy-parts.ts';
import * as z from '../zod.ts';

/**
 * Records as the store keeps them. Stores parse what they read back with these schemas (a stored item is
 * input like any other); public views are derived from records in lib/tenancy/tenancy.ts and lib/sandboxes/transition.ts.
 */

export const orgRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  quota: quotaSchema,
  /** The idle policy of its sandboxes that name none (and whose template names none); null: none. */
  idlePolicy: z._default(z.nullable(idlePolicySchema), null),
  /** The egress policy of sandboxes that name none and whose template names none (docs/network.md). */
  networkPolicy: z._default(z.nullable(networkPolicySchema), null),
  /** Micros per calendar month; null: no budget (records stored before budgets existed have none). */
  budget: z._default(z.nullable(z.int()), null),
  createdAt: z.string(),
});
export type OrgRecord = z.infer<typeof orgRecordSchema>;

export const keyRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  role: z.enum(keyRoles),
  projectId: z.nullable(z.string()),
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash: z.string(),
  createdAt: z.string(),
  revokedAt: z.nullable(z.string()),
});
export type KeyRecord = z.infer<typeof keyRecordSchema>;

export const projectRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  /** Micros per calendar month, counted besides the org's; null: only the org's budget applies. */
  budget: z._default(z.nullable(z.int()), null),
  createdAt: z.string(),
});
export type ProjectRecord = z.infer<typeof projectRecordSchema>;

/**
 * A pool registered through the admin API. The adapter kind is any string here: a pool stored by an
 * earlier build may name a kind this build lacks, and it must still load (as a pool without adapter).
 */
export const poolRecordSchema = z.object({
  ...poolConfigSchema.shape,
  adapter: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type PoolRecord = z.infer<typeof poolRecordSchema>;

export const capabilitiesSchema = z.object({
  features: z.array(z.string()),
  maxCPU: z.number(),
  maxMemoryMiB: z.number(),
  maxDiskGiB: z.number(),
  templates: z.array(z.string()),
  regions: z.array(z.string()),
});

export const capacitySchema = z.object({
  bounded: z.boolean(),
  freeCPU: z.number(),
  freeMemoryMiB: z.number(),
  largestFreeCPU: z.number(),
  largestFreeMemoryMiB: z.number(),
});

/** What pool-refresh last learned of a pool: the view placement and GET /v1/admin/pools/{name} read. */
export const poolViewSchema = z.object({
  pool: z.string(),
  healthy: z.boolean(),
  /** Why the pool is unhealthy, or why a part of the view is missing. */
  reason: z.nullable(z.string()),
  /** Capabilities as declared, with features already filtered by EffectiveFeatures. */
  capabilities: z.nullable(capabilitiesSchema),
  capacity: z.nullable(capacitySchema),
  refreshedAt: z.string(),
  /**
   * When an adapter error last said the backend is down (any container's worker or API call), and why.
   * The pool is unhealthy until a probe that started after it succeeds (lib/pools/registry.ts).
   */
  downSince: z._default(z.nullable(z.string()), null),
  downReason: z._default(z.nullable(z.string()), null),
});
export type PoolView = z.infer<typeof poolViewSchema>;

/** The down mark as stored, apart from the probe's view so neither write overwrites the other. */
export const poolDownMarkSchema = z.object({ pool: z.string(), at: z.string(), reason: z.string() });
export type PoolDownMark = z.infer<typeof poolDownMarkSchema>;

/** Views with their pools' down marks folded in; a mark on a pool never probed yet makes a view of its own. */
export function withDownMarks(views: PoolView[], marks: Map<string, PoolDownMark>): PoolView[] {
  const merged = views.map((view) => {
    const mark = marks.get(view.pool);
    return mark === undefined ? view : { ...view, downSince: mark.at, downReason: mark.reason };
  });
  for (const mark of marks.values()) {
    if (views.some((view) => view.pool === mark.pool)) continue;
    merged.push({
      pool: mark.pool,
      healthy: true,
      reason: null,
      capabilities: null,
      capacity: null,
      refreshedAt: new Date(0).toISOString(),
      downSince: mark.at,
      downReason: mark.reason,
    });
  }
  return merged;
}

import { sandboxNetworkSchema } from '../network/policy.ts';

export { type PlacementPolicy, placementPolicySchema } from '../config.ts';

export const sandboxRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.nullable(z.string()),
  status: z.enum(sandboxStatuses),
  statusMessage: z.nullable(z.string()),
  /** Why a queued sandbox waits (none: not waiting, or stored before the field existed). */
  waitingFor: z._default(z.nullable(z.enum(waitReasons)), null),
  /** Increases by one on every write; every update is conditional on it. */
  version: z.int(),
  pool: z.nullable(z.string()),
  backendRef: z.nullable(z.string()),
  template: z.nullable(z.string()),
  resources: resourcesSchema,
  labels: z.record(z.string(), z.string()),
  capabilities: z.array(z.string()),
  env: z.record(z.string(), z.string()),
  ttlSeconds: z.int(),
  queueTimeoutSeconds: z.nullable(z.int()),
  allowedPools: z.nullable(z.array(z.string())),
  regions: z.nullable(z.array(z.string())),
  fromSnapshot: z.nullable(z.string()),
  /** Decides, with the global policy, whether external pools are permitted (see lib/policy). */
  classification: z._default(z.nullable(z.string()), null),
  /** Counted provisioning attempts (insufficient_capacity and quota waits are not counted). */
  attempts: z.int(),
  placement: placementDecisionSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
  expiresAt: z.nullable(z.string()),
  /** Its idle policy, resolved at create (lib/sandboxes/idle.ts); null: none. */
  idle: z._default(z.nullable(sandboxIdleSchema), null),
  /** Its egress policy, resolved at create (lib/network/policy.ts); null: none (and records before it). */
  network: z._default(z.nullable(sandboxNetworkSchema), null),
  /** What it holds of and owes to budgets (lib/budgets/billing.ts); null until it is first activated. */
  billing: z._default(z.nullable(sandboxBillingSchema), null),
  /** The last lifecycle operation (records written before operations were asynchronous have none). */
  operation: z._default(z.nullable(sandboxOperationSchema), null),
  /** Set when its create claimed a warm instance (lib/warm/); null: built for it. */
  warm: z._default(z.nullable(sandboxWarmSchema), null),
});
export type SandboxRecord = z.infer<typeof sandboxRecordSchema>;

/** What a create decides about a new sandbox; everything else starts as every new sandbox does. */
export type NewSandbox = Pick<
  SandboxRecord,
  | 'id'
  | 'orgId'
  | 'projectId'
  | 'template'
  | 'resources'
  | 'labels'
  | 'capabilities'
  | 'env'
  | 'ttlSeconds'
  | 'queueTimeoutSeconds'
  | 'allowedPools'
  | 'regions'
  | 'fromSnapshot'
  | 'classification'
  | 'idle'
  | 'network'
>;

/**
 * The one way a sandbox's record is made: queued, unplaced, unbilled, at version 1, created at `now`.
 * The sandbox service's create starts here (a warm claim turns that draft running), and so do the tests' records.
 */
export function queuedSandbox(fields: NewSandbox, now: string): SandboxRecord {
  return {
    ...fields,
    status: 'queued',
    statusMessage: null,
    waitingFor: null,
    version: 1,
    pool: null,
    backendRef: null,
    attempts: 0,
    placement: { pool: null, rejected: [], decidedAt: null },
    createdAt: now,
    updatedAt: now,
    expiresAt: null,
    operation: null,
    billing: null,
    warm: null,
  };
}

export const snapshotRecordSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.nullable(z.string()),
  /** The sandbox it was taken from; the snapshot outlives it. */
  sandboxId: z.string(),
  /** Restores are pinned to this pool: snapshots are not portable between backends. */
  pool: z.string(),
  /** The backend's ref; empty until the snapshot is ready. */
  backendRef: z.string(),
  kind: z.enum(['disk', 'memory']),
  sizeBytes: z.number(),
  status: z.enum(snapshotStatuses),
  statusMessage: z._default(z.nullable(z.string()), null),
  createdAt: z.string(),
  /** Records written before snapshots were asynchronous have none: their creation time stands in. */
  updatedAt: z.optional(z.string()),
});
export type SnapshotRecord = z.infer<typeof snapshotRecordSchema>;

export const usageSchema = z.object({
  cpu: z.number(),
  memoryMiB: z.number(),
  diskGiB: z.number(),
  sandboxes: z.number(),
  snapshots: z.number(),
});

export { auditEventSchema } from '../schemas/audit.ts';

export const ledgerSchema = z.object({
  reserved: z._default(z.number(), 0),
  spent: z._default(z.number(), 0),
});

/**
 * A warm instance (lib/warm/): a backend instance made ahead of any create for one target of a pool,
 * owned by the installation until a create claims it. Its id is the id its sandbox will have, so the
 * backend's ownership labels name that sandbox from the start; a claim removes the record in the same
 * write as the sandbox is recorded, and an instance is never handed out twice.
 */
export const warmRecordSchema = z.object({
  id: z.string(),
  pool: z.string(),
  /** The target's shape (lib/warm/shape.ts): a create matches when its own shape is the same. */
  shape: z.string(),
  template: z.nullable(z.string()),
  resources: resourcesSchema,
  network: z.nullable(sandboxNetworkSchema),
  /** provisioning: its Create is under way; ready: claimable. */
  status: z.enum(['provisioning', 'ready']),
  backendRef: z.nullable(z.string()),
  version: z.int(),
  createdAt: z.string(),
  readyAt: z.nullable(z.string()),
  updatedAt: z.string(),
});
export type WarmRecord = z.infer<typeof warmRecordSchema>;
