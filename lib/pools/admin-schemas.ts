import { poolPricesSchema } from '../budgets/prices.ts';
import { credentialRefSchema, placementPolicySchema, poolConfigSchema } from '../config.ts';
import { networkPolicySchema } from '../network/policy.ts';
import { warmTargetStatusSchema, warmTargetsSchema } from '../schemas/warm-targets.ts';
import { capabilitiesSchema, capacitySchema } from '../store/records.ts';
import * as z from '../zod.ts';

/**
 * POST /v1/admin/pools: the same fields as a pool in the config file. The adapter kind is checked by the
 * registry so that a kind this build lacks is a 400 naming it, like any other bad field.
 */
export const createPoolSchema = z.extend(poolConfigSchema, {
  adapter: z.string().check(z.minLength(1), z.maxLength(63)),
});

/** PATCH /v1/admin/pools/{name}: any field but the name and the adapter kind; `null` clears an optional one. */
export const updatePoolSchema = z
  .strictObject({
    trust: z.optional(z.enum(['private', 'external'])),
    region: z.optional(z.nullable(z.string().check(z.minLength(1), z.maxLength(63)))),
    maxConcurrency: z.optional(z.int().check(z.gte(0))),
    costModel: z.optional(
      z.nullable(
        z.strictObject({ cpuHour: z.number().check(z.gte(0)), memoryGiBHour: z.number().check(z.gte(0)) }),
      ),
    ),
    prices: z.optional(z.nullable(poolPricesSchema)),
    config: z.optional(z.record(z.string(), z.unknown())),
    credentials: z.optional(z.nullable(credentialRefSchema)),
    features: z.optional(z.nullable(z.array(z.string().check(z.minLength(1), z.maxLength(64))))),
    /** Replaces the pool's warm targets; null or [] keeps none (docs/placement.md). */
    warm: z.optional(z.nullable(warmTargetsSchema)),
  })
  .check(
    z.refine((patch) => Object.keys(patch).length > 0, { message: 'name at least one field to change' }),
  );

export const poolParams = z.strictObject({
  name: z.string().check(z.regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'a pool name')),
});

export const poolHealthSchema = z.object({ healthy: z.boolean(), reason: z.nullable(z.string()) });

/** A pool as the admin API shows it: its settings, where it is defined, and what pool-refresh last saw. */
export const poolSchema = z.object({
  name: z.string(),
  adapter: z.string(),
  trust: z.enum(['private', 'external']),
  region: z.optional(z.string()),
  maxConcurrency: z.int(),
  costModel: z.optional(z.object({ cpuHour: z.number(), memoryGiBHour: z.number() })),
  /** What its sandboxes cost against budgets: zero where the pool names no prices. */
  prices: poolPricesSchema,
  config: z.record(z.string(), z.unknown()),
  /** The reference (an environment variable or a secret ARN), never the value. */
  credentials: z.optional(credentialRefSchema),
  /** Effective features: the declared ones minus those whose interface the adapter lacks. */
  features: z.array(z.string()),
  source: z.enum(['config', 'api']),
  health: poolHealthSchema,
  capabilities: z.nullable(capabilitiesSchema),
  capacity: z.nullable(capacitySchema),
  /** Slots taken by provisioning, running, paused and stopped sandboxes, and by warm instances. */
  active: z.int(),
  refreshedAt: z.nullable(z.string()),
  /** Its warm targets and their instances now (docs/placement.md, "Warm pools"). */
  warm: z.array(warmTargetStatusSchema),
});
export type PoolDetail = z.infer<typeof poolSchema>;

export const poolDeletedSchema = z.object({ name: z.string(), deleted: z.literal(true) });

export const policySchema = placementPolicySchema;
export const policyViewSchema = z.object({
  allowExternal: z.boolean(),
  externalPools: z.array(z.string()),
  /** `config` until an admin stores one with PUT /v1/admin/policy. */
  source: z.enum(['config', 'api']),
});

export const trustPoolSchema = z.object({
  name: z.string(),
  adapter: z.string(),
  trust: z.enum(['private', 'external']),
  region: z.nullable(z.string()),
  /** The isolation the adapter declares (or, with no adapter, unknown). */
  isolation: z.string(),
  /** Whether anything checks the isolation claim; most backends' is reported, not verified. */
  isolationVerified: z.boolean(),
  features: z.array(z.string()),
  healthy: z.boolean(),
  limitations: z.array(z.string()),
  /** What its sandboxes cost against budgets (zero where the pool names no prices). */
  prices: poolPricesSchema,
  /** Whether the current policy lets this pool receive work from tenants whose classification allows it. */
  receivesExternalWork: z.boolean(),
  /**
   * The egress policies it enforces per sandbox (docs/network.md): the modes and allow-list kinds of its
   * `network.egress.*` features; empty: a sandbox asking for a policy is never placed here.
   */
  egress: z.array(z.enum(['allow', 'deny', 'allowlist', 'domains', 'ports'])),
  /** Its warm targets: creates that match one may be answered from an instance made ahead of them. */
  warm: z.array(warmTargetStatusSchema),
});

export const trustReportSchema = z.object({
  policy: policyViewSchema,
  pools: z.array(trustPoolSchema),
  /** External pools that receive work under the current policy. */
  externalPoolsInUse: z.array(z.string()),
  /** The installation's egress settings: the default policy (null: none) and the deny-list no policy opens. */
  network: z.object({ default: z.nullable(networkPolicySchema), denyAlways: z.array(z.string()) }),
  classifications: z.record(
    z.string(),
    z.object({ allowExternal: z.boolean(), description: z.optional(z.string()) }),
  ),
  generatedAt: z.string(),
});

export const templateViewSchema = z.object({
  name: z.string(),
  description: z.optional(z.string()),
  image: z.optional(z.string()),
});
