import { z } from 'zod';

export const quotaSchema = z.strictObject({
  maxCPU: z.number().positive().max(1_000_000).default(64),
  maxMemoryMiB: z
    .int()
    .positive()
    .default(128 * 1024),
  maxDiskGiB: z.int().positive().default(2048),
  maxSandboxes: z.int().positive().default(100),
  maxSnapshots: z.int().min(0).default(100),
});
export type Quota = z.infer<typeof quotaSchema>;

export const createOrgSchema = z.strictObject({
  name: z.string().trim().min(1).max(128),
  quota: quotaSchema.partial().optional(),
});

export const orgSchema = z.object({
  id: z.string(),
  name: z.string(),
  quota: quotaSchema,
  createdAt: z.string(),
});
export type OrgView = z.infer<typeof orgSchema>;

export const keyRoles = ['admin', 'member'] as const;

export const createKeySchema = z.strictObject({
  name: z.string().trim().min(1).max(128),
  projectId: z.string().min(1).max(64).optional(),
  role: z.enum(keyRoles).default('member'),
});

export const keySchema = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  role: z.enum(keyRoles),
  projectId: z.string().nullable(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export type KeyView = z.infer<typeof keySchema>;

/** The only response that ever carries a key's secret. */
export const createdKeySchema = keySchema.extend({ key: z.string() });
