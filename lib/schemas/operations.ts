import { z } from 'zod';
import { idPattern } from '../ids.ts';

export const pathQuerySchema = z.strictObject({ path: z.string().min(1).max(4096) });

export const fileInfoSchema = z.object({
  name: z.string(),
  path: z.string(),
  isDir: z.boolean(),
  size: z.number(),
  modifiedAt: z.string().optional(),
});

export const fileListSchema = z.object({ items: z.array(fileInfoSchema) });

export const snapshotRequestSchema = z.strictObject({ kind: z.enum(['disk', 'memory']).default('disk') });

export const snapshotSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.string().nullable(),
  sandboxId: z.string(),
  pool: z.string(),
  kind: z.enum(['disk', 'memory']),
  sizeBytes: z.number(),
  status: z.enum(['ready']),
  createdAt: z.string(),
});

export const snapshotParams = z.strictObject({
  id: z.string().regex(idPattern('snapshot'), 'a snapshot id (snp_...)'),
});

export const snapshotDeletedSchema = z.object({
  id: z.string(),
  deleted: z.literal(true),
  backendDeleted: z.boolean(),
  note: z.string().optional(),
});

export const portRequestSchema = z.strictObject({ port: z.int().min(1).max(65535) });
export const portSchema = z.object({ url: z.string() });
