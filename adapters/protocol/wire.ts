/**
 * The adapter HTTP protocol's bodies (adapter specification section 7), as zod schemas shared by the
 * handler (what it accepts) and the remote client (what it trusts of a server's answers).
 */
import { z } from 'zod';
import { errorCodes } from '../../lib/errors.ts';
import { fileInfoSchema } from '../../lib/schemas/operations.ts';
import { execRequestSchema, execResultSchema } from '../../lib/schemas/sandboxes.ts';
import { capabilitiesSchema, capacitySchema } from '../../lib/store/records.ts';

export const protocolBase = '/adapter/v1';
export const protocolHeader = 'differently-adapter-protocol';
/** JSON request bodies above this are refused (413) before they are read whole. */
export const maxJsonBytes = 4 * 1024 * 1024;
/** File content, both ways. */
export const maxFileBytes = 100 * 1024 * 1024;
/** A streamed exec line longer than this is an error on the client. */
export const maxStreamLineBytes = 8 * 1024 * 1024;

export const infoSchema = z.object({
  kind: z.string(),
  version: z.string(),
  trust: z.enum(['private', 'external']),
  isolation: z.string(),
  protocol: z.string(),
  description: z.string().optional(),
  isolationVerified: z.boolean().optional(),
  limitations: z.array(z.string()).optional(),
});

export const infoResponseSchema = z.object({ info: infoSchema, capabilities: capabilitiesSchema });

export const instanceSchema = z.object({
  ref: z.string().min(1),
  sandboxId: z.string(),
  state: z.enum(['pending', 'running', 'stopped', 'paused', 'error']),
  region: z.string().optional(),
  message: z.string().optional(),
});

export const createRequestSchema = z.strictObject({
  id: z.string().min(1).max(128),
  installation: z.string().min(1).max(128),
  template: z.string().min(1).max(512).optional(),
  resources: z.strictObject({
    cpu: z.number().positive(),
    memoryMiB: z.int().positive(),
    diskGiB: z.int().positive(),
  }),
  env: z.record(z.string(), z.string()),
  labels: z.record(z.string(), z.string()),
  ttlSeconds: z.int().positive().optional(),
  fromSnapshot: z.string().min(1).max(512).optional(),
});

export const snapshotRequestSchema = z.strictObject({ kind: z.enum(['disk', 'memory']).default('disk') });
export const snapshotSchema = z.object({
  ref: z.string().min(1),
  kind: z.enum(['disk', 'memory']),
  sizeBytes: z.number(),
});
export const portRequestSchema = z.strictObject({ port: z.int().min(1).max(65535) });
export const portSchema = z.object({ url: z.string().min(1) });
export const healthSchema = z.object({ status: z.literal('ok') });

export const envelopeSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).default({}),
  }),
});

/** One line of a streamed exec: output, or the single final event. */
export const streamLineSchema = z.union([
  z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ exitCode: z.int() }),
  z.object({ error: z.string() }),
]);

export { capacitySchema, execRequestSchema, execResultSchema, fileInfoSchema };
