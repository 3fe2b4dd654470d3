import * as z from '../zod.ts';
import { envSchema } from './common.ts';
import { execStreamLineSchema } from './exec-stream-lines.ts';

/** The signals a process can be sent through the API. */
export const processSignals = [
  'SIGINT',
  'SIGTERM',
  'SIGKILL',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
] as const;
export type ProcessSignal = (typeof processSignals)[number];

/** Input a single request may carry; a process takes at most its backend's bytes a second on top. */
export const maxStdinBytesPerRequest = 64 * 1024;

export const terminalSizeSchema = z.strictObject({
  cols: z.int().check(z.gte(1), z.lte(1000)),
  rows: z.int().check(z.gte(1), z.lte(1000)),
});

export const startProcessSchema = z
  .strictObject({
    command: z.optional(z.string().check(z.minLength(1), z.maxLength(128 * 1024))),
    args: z.optional(
      z.array(z.string().check(z.maxLength(128 * 1024))).check(z.minLength(1), z.maxLength(1024)),
    ),
    env: z.optional(envSchema),
    cwd: z.optional(z.string().check(z.minLength(1), z.maxLength(4096))),
    /** A terminal of this size: stdout and stderr arrive as one stream (`stdout`), stdin is its keyboard. */
    pty: z.optional(terminalSizeSchema),
    /** Seconds the process may live; the backend's maximum applies (devhost: 7200). */
    timeoutSeconds: z.optional(z.int().check(z.gte(1), z.lte(24 * 3600))),
    tag: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    /** false: its stdin is closed at once (a command that reads it sees the end). Default true. */
    stdin: z.optional(z.boolean()),
    /** `root`: as the sandbox's superuser, on pools with `exec.root` (elsewhere 501); absent: its default user. */
    user: z.optional(z.literal('root')),
  })
  .check(
    z.refine((req) => (req.command === undefined) !== (req.args === undefined), {
      message: 'send exactly one of command (run by /bin/sh -c) or args (run directly)',
      path: ['command'],
    }),
  );
export type StartProcessRequest = z.infer<typeof startProcessSchema>;

export const processSchema = z.object({
  pid: z.int(),
  argv: z.array(z.string()),
  cwd: z.string(),
  pty: z.nullable(z.object({ cols: z.int(), rows: z.int() })),
  tag: z.nullable(z.string()),
  startedAt: z.string(),
  /** null while it runs. */
  exitCode: z.nullable(z.int()),
  stdinOpen: z.boolean(),
  /** Callers attached now: output goes to them as produced; with none it waits unread (bounded). */
  attached: z.int(),
});
export type ProcessView = z.infer<typeof processSchema>;

export const processListSchema = z.object({ items: z.array(processSchema) });

export const processParams = z.strictObject({
  id: z.string().check(z.minLength(1), z.maxLength(64)),
  pid: z.coerce.number().check(z.int(), z.gte(0), z.lte(2 ** 32 - 1)),
});

/** Input for a process: text, or bytes as base64; `close` ends its stdin after the data. */
export const stdinSchema = z
  .strictObject({
    data: z.optional(z.string().check(z.maxLength(maxStdinBytesPerRequest))),
    dataBase64: z.optional(z.base64().check(z.maxLength(Math.ceil(maxStdinBytesPerRequest / 3) * 4))),
    close: z.optional(z.boolean()),
  })
  .check(
    z.refine((req) => !(req.data !== undefined && req.dataBase64 !== undefined), {
      message: 'send data (text) or dataBase64 (bytes), not both',
      path: ['data'],
    }),
    z.refine((req) => req.data !== undefined || req.dataBase64 !== undefined || req.close === true, {
      message: 'send data, dataBase64, or close: true',
      path: ['data'],
    }),
  );
export type StdinRequest = z.infer<typeof stdinSchema>;

export const signalSchema = z.strictObject({ signal: z.enum(processSignals) });

export const processOutputQuerySchema = z.strictObject({
  maxBytes: z.optional(z.coerce.number().check(z.int(), z.gte(1), z.lte(1024 * 1024))),
});

/** What a process printed since the last attach or read (`exitCode` once it ended and all was read). */
export const processOutputSchema = z.object({
  stdout: z.string(),
  stderr: z.string(),
  exitCode: z.nullable(z.int()),
});

/** One line of an attach (NDJSON): the process first, its output, then `{exitCode}`, `{detached}` or `{error}`. */
export const attachLineSchema = z.union([
  z.object({ process: processSchema }),
  execStreamLineSchema,
  z.object({ detached: z.object({ reason: z.string() }) }),
]);
export type AttachStreamLine = z.infer<typeof attachLineSchema>;
