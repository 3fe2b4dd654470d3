import { idPattern } from '../ids.ts';
import { networkPolicySchema } from '../network/policy.ts';
import * as z from '../zod.ts';
import { idlePolicySchema } from './sandbox-parts.ts';
import { keyRoles, quotaChangeSchema, quotaSchema } from './tenancy-parts.ts';

/** The budget view of GET /v1/usage and the admin views, in currency units. */
export const budgetViewSchema = z.object({
  month: z.string(),
  /** Null: no budget, nothing is refused for cost. */
  monthly: z.nullable(z.number()),
  spent: z.number(),
  reserved: z.number(),
  /** Null without a budget; never below zero. */
  left: z.nullable(z.number()),
});
export type BudgetView = z.infer<typeof budgetViewSchema>;

export const createOrgSchema = z.strictObject({
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(128)),
  quota: z.optional(quotaChangeSchema),
});

export const orgSchema = z.object({
  id: z.string(),
  name: z.string(),
  quota: quotaSchema,
  /** Monthly budget (UTC calendar months) in the pools' currency; null: none. */
  budget: z.nullable(z.number()),
  /** The idle policy of sandboxes that name none and whose template names none; null: none. */
  idlePolicy: z.nullable(idlePolicySchema),
  /** The egress policy of sandboxes that name none and whose template names none; null: none. */
  networkPolicy: z.nullable(networkPolicySchema),
  createdAt: z.string(),
});
export type OrgView = z.infer<typeof orgSchema>;

export const createKeySchema = z
  .strictObject({
    name: z.string().check(z.trim(), z.minLength(1), z.maxLength(128)),
    projectId: z.optional(z.string().check(z.regex(idPattern('project'), 'a project id (prj_...)'))),
    /** admin: the operator's key (admin routes, no tenant routes); member: acts for the org, or one project. */
    role: z._default(z.enum(keyRoles), 'member'),
  })
  .check(
    z.refine((key) => key.role !== 'admin' || key.projectId === undefined, {
      path: ['projectId'],
      message: 'an admin key cannot be restricted to a project',
    }),
  );

export const setQuotaSchema = quotaChangeSchema.check(
  z.refine((quota) => Object.keys(quota).length > 0, {
    message: 'name at least one of maxCPU, maxMemoryMiB, maxDiskGiB, maxSandboxes, maxSnapshots',
  }),
);

export const projectParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('org'), 'an org id (org_...)')),
  projectId: z.string().check(z.regex(idPattern('project'), 'a project id (prj_...)')),
});

/** PUT /v1/admin/orgs/{id}/idle-policy: the org's default (null removes it). */
export const setIdlePolicySchema = z.strictObject({ policy: z.nullable(idlePolicySchema) });
export const setNetworkPolicySchema = z.strictObject({ policy: z.nullable(networkPolicySchema) });

export const createProjectSchema = z.strictObject({
  name: z.string().check(z.trim(), z.minLength(1), z.maxLength(128)),
});

export const projectSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  /** Monthly budget counted besides the org's; null: none of its own. */
  budget: z.nullable(z.number()),
  createdAt: z.string(),
});
export type ProjectView = z.infer<typeof projectSchema>;

export const usageViewSchema = z.object({
  cpu: z.number(),
  memoryMiB: z.number(),
  diskGiB: z.number(),
  sandboxes: z.number(),
  snapshots: z.number(),
});

/** GET /v1/usage: the org's quota, what it holds, and what is left of each limit. */
export const orgUsageSchema = z.object({
  orgId: z.string(),
  quota: quotaSchema,
  usage: usageViewSchema,
  available: usageViewSchema,
  /** This calendar month's (UTC) budget of the org: spent, reserved by live sandboxes, and left. */
  budget: budgetViewSchema,
  /** With a key restricted to a project: that project's budget. */
  projectBudget: z.optional(budgetViewSchema),
});

export const keySchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  role: z.enum(keyRoles),
  projectId: z.nullable(z.string()),
  createdAt: z.string(),
  revokedAt: z.nullable(z.string()),
});
export type KeyView = z.infer<typeof keySchema>;

/** The only response that ever carries a key's secret. */
export const createdKeySchema = z.extend(keySchema, {
  key: z.string(),
  /** The same key in E2B's shape (`e2b_` + hex), for E2B SDKs pointed at /e2b (docs/e2b.md). */
  e2bApiKey: z.string(),
});
export type CreatedKey = z.infer<typeof createdKeySchema>;
