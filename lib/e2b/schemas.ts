import * as z from 'zod';

/**
 * What E2B SDKs send to the control API (`NewSandboxV2`, and SDK 2.50's `NewSandbox` with `secure` and
 * `allow_internet_access`), read liberally: unknown fields are kept, so each option Differently cannot
 * honour is named in a 400 instead of being dropped unseen (../shared/reference/e2b-wire-protocol.md §3).
 */
export const newSandboxSchema = z.looseObject({
  templateID: z.string().min(1).max(512).default('base'),
  timeout: z
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional(),
  metadata: z.record(z.string(), z.string()).optional(),
  envVars: z.record(z.string(), z.string()).optional(),
  secure: z.boolean().optional(),
  allow_internet_access: z.boolean().optional(),
  autoPause: z.boolean().optional(),
  /** Resume on access: what an idle-paused sandbox does anyway, so only `enabled: false` is refused. */
  autoResume: z.looseObject({ enabled: z.boolean().optional() }).optional(),
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
  ]);
  // The SDK sends these with their defaults; only a value asking for more than Differently does is refused.
  const autoResume = body.autoResume as { enabled?: unknown } | undefined | null;
  if (body.autoPause === true && typeof autoResume === 'object' && autoResume?.enabled === false)
    refused.push('autoResume: {enabled: false} (an idle-paused sandbox resumes on its next call)');
  if (body.allow_internet_access === false)
    refused.push('allow_internet_access: false (no per-sandbox egress control)');
  for (const [name, value] of Object.entries(body)) {
    if (handled.has(name) || value === undefined || value === null) continue;
    if (name === 'autoPauseMemory' && value === false) continue;
    if (name === 'volumeMounts' && Array.isArray(value) && value.length === 0) continue;
    refused.push(name);
  }
  return refused;
}

export const connectSandboxSchema = z.looseObject({
  timeout: z
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional(),
});
export const setTimeoutSchema = z.looseObject({
  timeout: z
    .int()
    .min(0)
    .max(30 * 24 * 3600),
});

export const listQuerySchema = z.looseObject({
  state: z.string().optional(),
  metadata: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  nextToken: z.string().max(512).optional(),
});

/** process.Process/Start's request (proto3 JSON). */
export const processStartSchema = z.looseObject({
  process: z.looseObject({
    cmd: z.string().min(1),
    args: z.array(z.string()).default([]),
    envs: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
  }),
  pty: z.unknown().optional(),
  tag: z.string().optional(),
  stdin: z.boolean().optional(),
});

export const pathRequestSchema = z.looseObject({ path: z.string().min(1) });
export const listDirSchema = z.looseObject({
  path: z.string().min(1),
  depth: z.int().min(0).max(16).optional(),
});
export const moveSchema = z.looseObject({ source: z.string().min(1), destination: z.string().min(1) });

/** process.Process/SendSignal: the process by pid (a tag selector is not offered), the signal by name or number. */
export const sendSignalSchema = z.looseObject({
  process: z.looseObject({ pid: z.int().min(0) }),
  signal: z.union([z.string(), z.int()]),
});
