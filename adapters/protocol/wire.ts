/**
 * The adapter HTTP protocol's bodies (adapter specification section 7), as zod schemas shared by the
 * handler (what it accepts) and the remote client (what it trusts of a server's answers).
 */

import { errorCodes } from '../../lib/errors.ts';
import { sandboxNetworkSchema } from '../../lib/network/policy.ts';
import { processSignals } from '../../lib/schemas/processes.ts';
import * as z from '../../lib/zod.ts';

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
  z.pipe(
    z.nullish(z.string().check(z.maxLength(max))),
    z.transform((value) => (value === null || value === undefined || value === '' ? undefined : value)),
  );
/** A map a Go sender marshals as null when nil: an empty map. */
const stringMap = z.pipe(
  z.nullish(z.record(z.string(), z.string())),
  z.transform((value) => value ?? {}),
);
/** A list a Go sender marshals as null when nil: an empty list. */
const listOf = <T extends z.ZodMiniType>(item: T) =>
  z.pipe(
    z.nullish(z.array(item)),
    z.transform((value) => value ?? []),
  );
/** A number left out (omitempty drops zero) or null: 0. */
const count = z.pipe(
  z.nullish(z.number().check(z.gte(0))),
  z.transform((value) => value ?? 0),
);
const flag = z.pipe(
  z.nullish(z.boolean()),
  z.transform((value) => value ?? false),
);

/** Drops the keys whose value is undefined, so a parsed message is the contract's type. */
function defined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export const infoSchema = z.object({
  kind: z.string().check(z.minLength(1)),
  version: z.pipe(
    optionalText(256),
    z.transform((value) => value ?? ''),
  ),
  trust: z.enum(['private', 'external']),
  isolation: z.pipe(
    optionalText(1024),
    z.transform((value) => value ?? 'not stated'),
  ),
  protocol: z.string().check(z.minLength(1)),
  description: optionalText(4096),
  isolationVerified: z.pipe(
    z.nullish(z.boolean()),
    z.transform((value) => value ?? undefined),
  ),
  limitations: z.pipe(
    z.nullish(z.array(z.string())),
    z.transform((value) => value ?? undefined),
  ),
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

export const infoResponseSchema = z.pipe(
  z.object({ info: infoSchema, capabilities: wireCapabilitiesSchema }),
  z.transform(({ info, capabilities }) => ({ info: defined(info), capabilities })),
);

/** Capacity: a plugin that says nothing is unbounded (its pool's maxConcurrency governs). */
export const capacitySchema = z.object({
  bounded: flag,
  freeCPU: count,
  freeMemoryMiB: count,
  largestFreeCPU: count,
  largestFreeMemoryMiB: count,
});

export const instanceSchema = z.pipe(
  z.object({
    ref: z.string().check(z.minLength(1)),
    sandboxId: z.string(),
    state: z.enum(['pending', 'running', 'stopped', 'paused', 'error']),
    region: optionalText(256),
    message: optionalText(4096),
  }),
  z.transform(defined),
);

export const instanceListSchema = listOf(instanceSchema);

/** A CreateRequest as the handler accepts it: env, labels, template, ttl and fromSnapshot may be absent. */
export const createRequestSchema = z.pipe(
  z.object({
    id: z.string().check(z.minLength(1), z.maxLength(128)),
    installation: z.string().check(z.minLength(1), z.maxLength(128)),
    template: optionalText(512),
    resources: z.pipe(
      z.nullish(z.object({ cpu: count, memoryMiB: count, diskGiB: count })),
      z.transform((value) => value ?? { cpu: 0, memoryMiB: 0, diskGiB: 0 }),
    ),
    env: stringMap,
    labels: stringMap,
    ttlSeconds: z.pipe(
      z.nullish(z.int().check(z.gte(0))),
      z.transform((value) => (value === 0 || value === null ? undefined : value)),
    ),
    fromSnapshot: optionalText(512),
    /** The sandbox's egress policy, sent only to a plugin that declared the network.egress.* it needs. */
    network: z.pipe(
      z.nullish(sandboxNetworkSchema),
      z.transform((value) => value ?? undefined),
    ),
  }),
  z.transform(defined),
);

/** An ExecRequest as the handler accepts it: exactly one of command or args; the rest may be absent or null. */
export const execRequestSchema = z.pipe(
  z
    .object({
      command: optionalText(128 * 1024),
      args: z.pipe(
        z.nullish(z.array(z.string().check(z.maxLength(128 * 1024))).check(z.maxLength(1024))),
        z.transform((value) =>
          value === null || value === undefined || value.length === 0 ? undefined : value,
        ),
      ),
      env: z.pipe(
        z.nullish(z.record(z.string(), z.string())),
        z.transform((value) => value ?? undefined),
      ),
      cwd: optionalText(4096),
      stdin: optionalText(1024 * 1024),
      timeoutSeconds: z.pipe(
        z.nullish(z.int().check(z.gte(0), z.lte(7200))),
        z.transform((value) => (value === 0 || value === null ? undefined : value)),
      ),
    })
    .check(
      z.refine((req) => (req.command === undefined) !== (req.args === undefined), {
        message: 'send exactly one of command (run by /bin/sh -c) or args (run directly)',
        path: ['command'],
      }),
    ),
  z.transform(defined),
);

/** An ExecResult as the client accepts it: only the exit code is required. */
export const execResultSchema = z.object({
  exitCode: z.int(),
  stdout: z.pipe(
    optionalText(Number.MAX_SAFE_INTEGER),
    z.transform((value) => value ?? ''),
  ),
  stderr: z.pipe(
    optionalText(Number.MAX_SAFE_INTEGER),
    z.transform((value) => value ?? ''),
  ),
  durationMs: z.pipe(
    count,
    z.transform((value) => Math.round(value)),
  ),
  truncated: flag,
  timedOut: flag,
});

export const fileInfoSchema = z.pipe(
  z.object({
    name: z.string(),
    path: z.string(),
    isDir: flag,
    size: count,
    modifiedAt: optionalText(64),
  }),
  z.transform(defined),
);

export const fileListSchema = listOf(fileInfoSchema);

export const snapshotRequestSchema = z.object({
  kind: z.pipe(
    z.nullish(z.enum(['disk', 'memory'])),
    z.transform((value) => value ?? 'disk'),
  ),
});
export const snapshotSchema = z.object({
  ref: z.string().check(z.minLength(1)),
  kind: z.nullish(z.enum(['disk', 'memory'])),
  sizeBytes: count,
});
export const portRequestSchema = z.object({ port: z.int().check(z.gte(1), z.lte(65535)) });
export const portSchema = z.object({ url: z.string().check(z.minLength(1)) });
/** 200 is healthy; the body's `status` is informative. */
export const healthSchema = z.object({ status: z.nullish(z.string()) });

export const envelopeSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes),
    message: z.string(),
    details: z.pipe(
      z.nullish(z.record(z.string(), z.unknown())),
      z.transform((value) => value ?? {}),
    ),
  }),
});

/** One line of a streamed exec: output, or the single final event (an error as a string or an envelope body). */
export const streamLineSchema = z.union([
  z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ exitCode: z.int() }),
  z.object({ error: z.string() }),
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
]);

/*
 * Interactive processes (features exec.stdin and exec.pty): routes under /instances/{ref}/processes.
 * Input is raw bytes (at most maxProcessInputBytes a request); the attach is NDJSON: output events as a
 * streamed exec's, then one final {"exitCode"}, {"detached": true} or {"error"}.
 */

/** Input one request may carry (the API's own bound per request). */
export const maxProcessInputBytes = 64 * 1024;

const terminalSize = z.object({
  cols: z.int().check(z.gte(1), z.lte(1000)),
  rows: z.int().check(z.gte(1), z.lte(1000)),
});

export const processStartRequestSchema = z.pipe(
  z.object({
    argv: z.array(z.string().check(z.maxLength(128 * 1024))).check(z.minLength(1), z.maxLength(1024)),
    shell: flag,
    env: stringMap,
    cwd: optionalText(4096),
    pty: z.pipe(
      z.nullish(terminalSize),
      z.transform((value) => value ?? undefined),
    ),
    timeoutSeconds: z.int().check(z.gte(1), z.lte(24 * 3600)),
    tag: optionalText(256),
  }),
  z.transform(defined),
);

/** A process as the client accepts it: its pid is required, the rest takes defaults. */
export const processInfoSchema = z.object({
  pid: z.int().check(z.gte(0)),
  argv: listOf(z.string()),
  cwd: z.pipe(
    z.nullish(z.string()),
    z.transform((value) => value || '/'),
  ),
  pty: z.pipe(
    z.nullish(terminalSize),
    z.transform((value) => value ?? null),
  ),
  tag: z.pipe(
    z.nullish(z.string()),
    z.transform((value) => value || null),
  ),
  startedAt: z.pipe(
    z.nullish(z.string()),
    z.transform((value) => value ?? ''),
  ),
  exitCode: z.pipe(
    z.nullish(z.int()),
    z.transform((value) => value ?? null),
  ),
  stdinOpen: flag,
  attached: count,
});
export const processListSchema = listOf(processInfoSchema);

const outputEvent = z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() });

export const processOutputSchema = z.object({
  events: listOf(outputEvent),
  dropped: flag,
  exitCode: z.pipe(
    z.nullish(z.int()),
    z.transform((value) => value ?? null),
  ),
});

export const resizeRequestSchema = terminalSize;
export const signalRequestSchema = z.object({ signal: z.enum(processSignals) });

/** One line of an attach: output, or its single final event. */
export const attachLineSchema = z.union([
  outputEvent,
  z.object({ exitCode: z.int() }),
  z.object({ detached: z.literal(true) }),
  z.object({ error: z.string() }),
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
]);
