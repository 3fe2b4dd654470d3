import * as z from 'zod';

/**
 * A daytona pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const daytonaConfigSchema = z.strictObject({
  apiURL: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).default('https://app.daytona.io/api'),
  /** Region (Daytona's `target`). */
  target: z.string().min(1).optional(),
  /** The snapshot (Daytona's template image) a sandbox starts from when the request names no template. */
  snapshot: z.string().min(1).optional(),
  /** container (default) or linux-vm: only VM-class sandboxes pause with memory kept. */
  class: z.enum(['container', 'linux-vm']).default('container'),
  /** Preview URLs' lifetime. */
  portURLSeconds: z.int().min(1).max(86_400).default(3600),
  readyTimeoutSeconds: z.int().min(1).max(900).default(180),
  pollIntervalMs: z.int().min(10).max(10_000).default(1000),
});
export type DaytonaConfig = z.infer<typeof daytonaConfigSchema>;
