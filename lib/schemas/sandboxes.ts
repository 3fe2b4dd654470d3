import { networkPolicySchema, sandboxNetworkSchema } from '../network/policy.ts';
import * as z from '../zod.ts';
import { envSchema, labelsSchema, listQuerySchema } from './common.ts';
import {
  idlePolicySchema,
  placementDecisionSchema,
  requestedResourcesSchema,
  resourcesSchema,
  sandboxCostSchema,
  sandboxIdleSchema,
  sandboxOperationSchema,
  sandboxWarmSchema,
} from './sandbox-parts.ts';
import { sandboxStatuses, waitReasons } from './sandbox-status.ts';

export const maxTtlSeconds = 30 * 24 * 3600;
export const defaultTtlSeconds = 3600;

export const placementRequestSchema = z.strictObject({
  allowedPools: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(63))).check(z.maxLength(32))),
  regions: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(63))).check(z.maxLength(32))),
});

export const createSandboxSchema = z.strictObject({
  template: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
  resources: z.optional(requestedResourcesSchema),
  env: z.optional(envSchema),
  labels: z.optional(labelsSchema),
  capabilities: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.maxLength(32))),
  profile: z.optional(z.string().check(z.minLength(1), z.maxLength(63))),
  classification: z.optional(z.string().check(z.minLength(1), z.maxLength(63))),
  placement: z.optional(placementRequestSchema),
  ttlSeconds: z.optional(z.int().check(z.gte(60), z.lte(maxTtlSeconds))),
  fromSnapshot: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  projectId: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  queueTimeoutSeconds: z.optional(z.int().check(z.gte(1), z.lte(24 * 3600))),
  /** Overrides the template's and the org's default idle policy; null: none for this sandbox. */
  idle: z.optional(z.nullable(idlePolicySchema)),
  /** Overrides the template's and the installation's default egress policy (docs/network.md). */
  network: z.optional(networkPolicySchema),
});
export type CreateSandboxRequest = z.infer<typeof createSandboxSchema>;

/** The public view of a sandbox. Env values are never echoed; only their names are. */
export const sandboxSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.nullable(z.string()),
  status: z.enum(sandboxStatuses),
  statusMessage: z.nullable(z.string()),
  /** Why a queued sandbox waits: pool, quota, capacity or snapshot (statusMessage says it in words). */
  waitingFor: z.nullable(z.enum(waitReasons)),
  pool: z.nullable(z.string()),
  template: z.nullable(z.string()),
  resources: resourcesSchema,
  labels: z.record(z.string(), z.string()),
  capabilities: z.array(z.string()),
  envKeys: z.array(z.string()),
  ttlSeconds: z.int(),
  attempts: z.int(),
  placement: placementDecisionSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
  expiresAt: z.nullable(z.string()),
  /** The last stop, start, pause or resume and how it ended (null before the first). */
  operation: z.nullable(sandboxOperationSchema),
  /** Its idle policy (null: none); `idledAt` while it is paused or stopped for idleness. */
  idle: z.nullable(sandboxIdleSchema),
  /** Its egress policy in force (null: none asked for, the pool's own network; docs/network.md). */
  network: z.nullable(sandboxNetworkSchema),
  /** Set when it came from a warm pool: the instance was ready before the create (docs/placement.md). */
  warm: z.nullable(sandboxWarmSchema),
  /** What it has cost and holds of its budgets (null before it is first activated; docs/tenancy.md). */
  cost: z.nullable(sandboxCostSchema),
});
export type SandboxView = z.infer<typeof sandboxSchema>;

export const updateSandboxSchema = z
  .strictObject({
    /** Resets expiresAt to now + ttlSeconds (running, stopped and paused sandboxes). */
    ttlSeconds: z.optional(z.int().check(z.gte(60), z.lte(maxTtlSeconds))),
    /** Replaces the tenant's labels. */
    labels: z.optional(labelsSchema),
  })
  .check(
    z.refine((body) => body.ttlSeconds !== undefined || body.labels !== undefined, {
      message: 'send ttlSeconds, labels, or both',
    }),
  );

/** What happened to the provider-side lifetime when the TTL changed. */
export const backstopSchema = z.object({
  extended: z.boolean(),
  note: z.string(),
});

export const updatedSandboxSchema = z.extend(sandboxSchema, { providerTtl: z.optional(backstopSchema) });

export const sandboxListQuerySchema = z.extend(listQuerySchema, {
  status: z.optional(z.enum(sandboxStatuses)),
  projectId: z.optional(z.string().check(z.maxLength(64))),
  /** `key=value`, repeated by comma: `team=a,tier=gold`. */
  label: z.optional(z.string().check(z.maxLength(1024))),
});

export const execRequestSchema = z
  .strictObject({
    command: z.optional(z.string().check(z.minLength(1), z.maxLength(128 * 1024))),
    args: z.optional(
      z.array(z.string().check(z.maxLength(128 * 1024))).check(z.minLength(1), z.maxLength(1024)),
    ),
    env: z.optional(envSchema),
    cwd: z.optional(z.string().check(z.minLength(1), z.maxLength(4096))),
    stdin: z.optional(z.string().check(z.maxLength(1024 * 1024))),
    timeoutSeconds: z.optional(z.int().check(z.gte(1), z.lte(7200))),
    /** `root`: as the sandbox's superuser, on pools with `exec.root` (elsewhere 501); absent: its default user. */
    user: z.optional(z.literal('root')),
  })
  .check(
    z.refine((req) => (req.command === undefined) !== (req.args === undefined), {
      message: 'send exactly one of command (run by /bin/sh -c) or args (run directly)',
      path: ['command'],
    }),
  );
export type ExecRequest = z.infer<typeof execRequestSchema>;

export const execResultSchema = z.object({
  exitCode: z.int(),
  stdout: z.string(),
  stderr: z.string(),
  durationMs: z.int(),
  truncated: z.boolean(),
  timedOut: z.boolean(),
});
export type ExecResult = z.infer<typeof execResultSchema>;
