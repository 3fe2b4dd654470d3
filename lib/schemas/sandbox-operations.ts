import * as z from 'zod';
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

/** creating (the operations worker takes it on the backend), then ready, or failed with the reason. */
export const snapshotStatuses = ['creating', 'ready', 'failed'] as const;

export const snapshotSchema = z.object({
  id: z.string(),
  orgId: z.string(),
  projectId: z.string().nullable(),
  sandboxId: z.string(),
  pool: z.string(),
  kind: z.enum(['disk', 'memory']),
  sizeBytes: z.number(),
  status: z.enum(snapshotStatuses),
  statusMessage: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Snapshot = z.infer<typeof snapshotSchema>;

/** The lifecycle calls a tenant makes; the worker finishes them when the backend needs longer. */
export const lifecycleActions = ['stop', 'start', 'pause', 'resume'] as const;
export type LifecycleAction = (typeof lifecycleActions)[number];

/**
 * The last lifecycle operation asked of a sandbox and how it ended: pending while the record is in a
 * transitional status, then succeeded, or failed with the backend's code and message (the record is
 * back in the status it had).
 */
export const sandboxOperationSchema = z.object({
  action: z.enum(lifecycleActions),
  state: z.enum(['pending', 'succeeded', 'failed']),
  requestedAt: z.string(),
  settledAt: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** Who asked: a caller (`user`), or the idle policy (`idle`). Older records have none: a caller. */
  cause: z.enum(['user', 'idle']).default('user'),
});
export type SandboxOperation = z.infer<typeof sandboxOperationSchema>;

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
