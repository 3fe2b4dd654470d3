/**
 * The adapter HTTP protocol's bodies (adapter specification section 7), as zod schemas shared by the
 * handler (what it accepts) and the remote client (what it trusts of a server's answers).
 */
import * as z from 'zod';
import { errorCodes } from '../../lib/errors.ts';

export const protocolBase = '/adapter/v1';
export const protocolHeader = 'differently-adapter-protocol';
/** JSON request bodies above this are refused (413) before they are read whole. */
export const maxJsonBytes = 4 * 1024 * 1024;
/** File content, both ways. */
export const maxFileBytes = 100 * 1024 * 1024;
/** A streamed exec line longer than this is an error on the client. */
export const maxStreamLineBytes = 8 * 1024 * 1024;

/*
 * Liberal in what each side accepts (the specification's optional fields, and what a Go `omitempty` drops,
 * may be missing or null and take their documented default; unknown fields are ignored, since new fields
 * are not breaking changes: the protocol version is for those), strict in what it sends. Required fields,
 * types, sizes and limits stay checked. docs/adapters.md has one table per message.
 */

/** A string the sender may leave out, send as null, or send empty: all mean "not set". */
const optionalText = (max: number) =>
  z
    .string()
    .max(max)
    .nullish()
    .transform((value) => (value === null || value === undefined || value === '' ? undefined : value));
/** A map a Go sender marshals as null when nil: an empty map. */
const stringMap = z
  .record(z.string(), z.string())
  .nullish()
  .transform((value) => value ?? {});
/** A list a Go sender marshals as null when nil: an empty list. */
const listOf = <T extends z.ZodType>(item: T) =>
  z
    .array(item)
    .nullish()
    .transform((value) => value ?? []);
/** A number left out (omitempty drops zero) or null: 0. */
const count = z
  .number()
  .min(0)
  .nullish()
  .transform((value) => value ?? 0);
const flag = z
  .boolean()
  .nullish()
  .transform((value) => value ?? false);

/** Drops the keys whose value is undefined, so a parsed message is the contract's type. */
function defined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export const infoSchema = z.object({
  kind: z.string().min(1),
  version: optionalText(256).transform((value) => value ?? ''),
  trust: z.enum(['private', 'external']),
  isolation: optionalText(1024).transform((value) => value ?? 'not stated'),
  protocol: z.string().min(1),
  description: optionalText(4096),
  isolationVerified: z
    .boolean()
    .nullish()
    .transform((value) => value ?? undefined),
  limitations: z
    .array(z.string())
    .nullish()
    .transform((value) => value ?? undefined),
});

/** Capabilities as a plugin declares them; 0 limits mean none, empty templates mean any. */
export const wireCapabilitiesSchema = z.object({
  features: listOf(z.string()),
  maxCPU: count,
  maxMemoryMiB: count,
  maxDiskGiB: count,
  templates: listOf(z.string()),
  regions: listOf(z.string()),
});

export const infoResponseSchema = z
  .object({ info: infoSchema, capabilities: wireCapabilitiesSchema })
  .transform(({ info, capabilities }) => ({ info: defined(info), capabilities }));

/** Capacity: a plugin that says nothing is unbounded (its pool's maxConcurrency governs). */
export const capacitySchema = z.object({
  bounded: flag,
  freeCPU: count,
  freeMemoryMiB: count,
  largestFreeCPU: count,
  largestFreeMemoryMiB: count,
});

export const instanceSchema = z
  .object({
    ref: z.string().min(1),
    sandboxId: z.string(),
    state: z.enum(['pending', 'running', 'stopped', 'paused', 'error']),
    region: optionalText(256),
    message: optionalText(4096),
  })
  .transform(defined);

export const instanceListSchema = listOf(instanceSchema);

/** A CreateRequest as the handler accepts it: env, labels, template, ttl and fromSnapshot may be absent. */
export const createRequestSchema = z
  .object({
    id: z.string().min(1).max(128),
    installation: z.string().min(1).max(128),
    template: optionalText(512),
    resources: z
      .object({ cpu: count, memoryMiB: count, diskGiB: count })
      .nullish()
      .transform((value) => value ?? { cpu: 0, memoryMiB: 0, diskGiB: 0 }),
    env: stringMap,
    labels: stringMap,
    ttlSeconds: z
      .int()
      .min(0)
      .nullish()
      .transform((value) => (value === 0 || value === null ? undefined : value)),
    fromSnapshot: optionalText(512),
  })
  .transform(defined);

/** An ExecRequest as the handler accepts it: exactly one of command or args; the rest may be absent or null. */
export const execRequestSchema = z
  .object({
    command: optionalText(128 * 1024),
    args: z
      .array(z.string().max(128 * 1024))
      .max(1024)
      .nullish()
      .transform((value) =>
        value === null || value === undefined || value.length === 0 ? undefined : value,
      ),
    env: z
      .record(z.string(), z.string())
      .nullish()
      .transform((value) => value ?? undefined),
    cwd: optionalText(4096),
    stdin: optionalText(1024 * 1024),
    timeoutSeconds: z
      .int()
      .min(0)
      .max(7200)
      .nullish()
      .transform((value) => (value === 0 || value === null ? undefined : value)),
  })
  .refine((req) => (req.command === undefined) !== (req.args === undefined), {
    message: 'send exactly one of command (run by /bin/sh -c) or args (run directly)',
    path: ['command'],
  })
  .transform(defined);

/** An ExecResult as the client accepts it: only the exit code is required. */
export const execResultSchema = z.object({
  exitCode: z.int(),
  stdout: optionalText(Number.MAX_SAFE_INTEGER).transform((value) => value ?? ''),
  stderr: optionalText(Number.MAX_SAFE_INTEGER).transform((value) => value ?? ''),
  durationMs: count.transform((value) => Math.round(value)),
  truncated: flag,
  timedOut: flag,
});

export const fileInfoSchema = z
  .object({
    name: z.string(),
    path: z.string(),
    isDir: flag,
    size: count,
    modifiedAt: optionalText(64),
  })
  .transform(defined);

export const fileListSchema = listOf(fileInfoSchema);

export const snapshotRequestSchema = z.object({
  kind: z
    .enum(['disk', 'memory'])
    .nullish()
    .transform((value) => value ?? 'disk'),
});
export const snapshotSchema = z.object({
  ref: z.string().min(1),
  kind: z.enum(['disk', 'memory']).nullish(),
  sizeBytes: count,
});
export const portRequestSchema = z.object({ port: z.int().min(1).max(65535) });
export const portSchema = z.object({ url: z.string().min(1) });
/** 200 is healthy; the body's `status` is informative. */
export const healthSchema = z.object({ status: z.string().nullish() });

export const envelopeSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes),
    message: z.string(),
    details: z
      .record(z.string(), z.unknown())
      .nullish()
      .transform((value) => value ?? {}),
  }),
});

/** One line of a streamed exec: output, or the single final event (an error as a string or an envelope body). */
export const streamLineSchema = z.union([
  z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ exitCode: z.int() }),
  z.object({ error: z.string() }),
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
]);
