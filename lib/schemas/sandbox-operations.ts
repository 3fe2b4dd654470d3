import { idPattern } from '../ids.ts';
import * as z from '../zod.ts';
import { snapshotStatuses } from './sandbox-parts.ts';

export const pathQuerySchema = z.strictObject({ path: z.string().check(z.minLength(1), z.maxLength(4096)) });

export const fileInfoSchema = z.object({
  name: z.string(),
  path: z.string(),
  isDir: z.boolean(),
  size: z.number(),
  modifiedAt: z.optional(z.string()),
});

export const fileListSchema = z.object({ items: z.array(fileInfoSchema) });

export const snapshotRequestSchema = z.strictObject({ kind: z._default(z.enum(['disk', 'memory']), 'disk') });

export const snapshotSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.nullable(z.string()),
  sandboxId: z.string(),
  pool: z.string(),
  kind: z.enum(['disk', 'memory']),
  sizeBytes: z.number(),
  status: z.enum(snapshotStatuses),
  statusMessage: z.nullable(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Snapshot = z.infer<typeof snapshotSchema>;

export const snapshotParams = z.strictObject({
  id: z.string().check(z.regex(idPattern('snapshot'), 'a snapshot id (snp_...)')),
});

export const snapshotDeletedSchema = z.object({
  id: z.string(),
  deleted: z.literal(true),
  backendDeleted: z.boolean(),
  note: z.optional(z.string()),
});

export const portRequestSchema = z.strictObject({ port: z.int().check(z.gte(1), z.lte(65535)) });
export const portSchema = z.object({ url: z.string() });
