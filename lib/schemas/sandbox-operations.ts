import { idPattern } from '../ids.ts';
import * as z from '../zod.ts';

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

/** creating (the operations worker takes it on the backend), then ready, or failed with the reason. */
export const snapshotStatuses = ['creating', 'ready', 'failed'] as const;

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
  settledAt: z.nullable(z.string()),
  error: z.nullable(z.object({ code: z.string(), message: z.string() })),
  /** Who asked: a caller (`user`), or the idle policy (`idle`). Older records have none: a caller. */
  cause: z._default(z.enum(['user', 'idle']), 'user'),
});
export type SandboxOperation = z.infer<typeof sandboxOperationSchema>;

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
