import * as z from '../zod.ts';
import { refusedNetworkOptions } from './network.ts';

/**
 * What E2B SDKs send to the control API (`NewSandboxV2`, and SDK 2.50's `NewSandbox` with `secure` and
 * `allow_internet_access`), read liberally: unknown fields are kept, so each option Differently cannot
 * honour is named in a 400 instead of being dropped unseen (../shared/reference/e2b-wire-protocol.md §3).
 */
export const newSandboxSchema = z.looseObject({
  templateID: z._default(z.string().check(z.minLength(1), z.maxLength(512)), 'base'),
  timeout: z.optional(z.int().check(z.gte(1), z.lte(30 * 24 * 3600))),
  metadata: z.optional(z.record(z.string(), z.string())),
  envVars: z.optional(z.record(z.string(), z.string())),
  secure: z.optional(z.boolean()),
  allow_internet_access: z.optional(z.boolean()),
  autoPause: z.optional(z.boolean()),
  /** Resume on access: what an idle-paused sandbox does anyway, so only `enabled: false` is refused. */
  autoResume: z.optional(z.looseObject({ enabled: z.optional(z.boolean()) })),
});
export type NewSandbox = z.infer<typeof newSandboxSchema>;

/** Options of a create Differently refuses when they ask for something it does not do. */
export function refusedCreateOptions(body: Record<string, unknown>): string[] {
  const refused: string[] = [];
  const handled = new Set([
    'templateID',
    'timeout',
    'metadata',
    'envVars',
    'secure',
    'allow_internet_access',
    'autoPause',
    'autoResume',
    'network',
  ]);
  // The SDK sends these with their defaults; only a value asking for more than Differently does is refused.
  const autoResume = body.autoResume as { enabled?: unknown } | undefined | null;
  if (body.autoPause === true && typeof autoResume === 'object' && autoResume?.enabled === false)
    refused.push('autoResume: {enabled: false} (an idle-paused sandbox resumes on its next call)');
  refused.push(...refusedNetworkOptions(body));
  for (const [name, value] of Object.entries(body)) {
    if (handled.has(name) || value === undefined || value === null) continue;
    if (name === 'autoPauseMemory' && value === false) continue;
    if (name === 'volumeMounts' && Array.isArray(value) && value.length === 0) continue;
    refused.push(name);
  }
  return refused;
}

export const connectSandboxSchema = z.looseObject({
  timeout: z.optional(z.int().check(z.gte(1), z.lte(30 * 24 * 3600))),
});
export const setTimeoutSchema = z.looseObject({
  timeout: z.int().check(z.gte(0), z.lte(30 * 24 * 3600)),
});

export const listQuerySchema = z.looseObject({
  state: z.optional(z.string()),
  metadata: z.optional(z.string()),
  limit: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(100))),
  nextToken: z.optional(z.string().check(z.maxLength(512))),
});

/** process.Process/Start's request (proto3 JSON). */
export const processStartSchema = z.looseObject({
  process: z.looseObject({
    cmd: z.string().check(z.minLength(1)),
    args: z._default(z.array(z.string()), []),
    envs: z._default(z.record(z.string(), z.string()), {}),
    cwd: z.optional(z.string()),
  }),
  pty: z.optional(z.unknown()),
  tag: z.optional(z.string()),
  stdin: z.optional(z.boolean()),
});

export const pathRequestSchema = z.looseObject({ path: z.string().check(z.minLength(1)) });
export const listDirSchema = z.looseObject({
  path: z.string().check(z.minLength(1)),
  depth: z.optional(z.int().check(z.gte(0), z.lte(16))),
});
export const moveSchema = z.looseObject({
  source: z.string().check(z.minLength(1)),
  destination: z.string().check(z.minLength(1)),
});

/** process.Process/SendSignal: the process by pid (a tag selector is not offered), the signal by name or number. */
export const sendSignalSchema = z.looseObject({
  process: z.looseObject({ pid: z.int().check(z.gte(0)) }),
  signal: z.union([z.string(), z.int()]),
});

/** A process selector: by pid, or by the tag it was started with. */
const processSelectorSchema = z.looseObject({
  pid: z.optional(z.int().check(z.gte(0))),
  tag: z.optional(z.string()),
});

/** process.Process/Connect: attach to a process by pid or tag. */
export const processConnectSchema = z.looseObject({
  process: processSelectorSchema.check(
    z.refine(
      (selector) => selector.pid !== undefined || selector.tag !== undefined,
      'name the process by pid or tag',
    ),
  ),
});

const pidOnlySchema = z.looseObject({ pid: z.int().check(z.gte(0)) });

/** process.Process/SendInput: bytes for stdin or for the terminal, base64 (proto3 JSON). */
export const sendInputSchema = z.looseObject({
  process: pidOnlySchema,
  input: z.looseObject({ stdin: z.optional(z.base64()), pty: z.optional(z.base64()) }),
});

export const closeStdinSchema = z.looseObject({ process: pidOnlySchema });

/** process.Process/Update: a terminal's new size. */
export const processUpdateSchema = z.looseObject({
  process: pidOnlySchema,
  pty: z.optional(
    z.looseObject({
      size: z.optional(
        z.looseObject({
          cols: z.int().check(z.gte(1), z.lte(1000)),
          rows: z.int().check(z.gte(1), z.lte(1000)),
        }),
      ),
    }),
  ),
});

/**
 * The messages of process.Process/StreamInput (a client stream): first `start` naming the process, then
 * `data` with input for stdin or the terminal, with `keepalive` between.
 */
export const streamInputStartSchema = z.looseObject({
  start: z.looseObject({ process: processSelectorSchema }),
});
export const streamInputDataSchema = z.looseObject({
  data: z.looseObject({
    input: z.looseObject({ stdin: z.optional(z.base64()), pty: z.optional(z.base64()) }),
  }),
});
export const streamInputKeepaliveSchema = z.looseObject({ keepalive: z.looseObject({}) });
