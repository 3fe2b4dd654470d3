import * as z from '../../lib/zod.ts';

/**
 * A daytona pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const daytonaConfigSchema = z.lazy(() =>
  z.strictObject({
    apiURL: z._default(
      z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
      'https://app.daytona.io/api',
    ),
    /** Region (Daytona's `target`). */
    target: z.optional(z.string().check(z.minLength(1))),
    /** The snapshot (Daytona's template image) a sandbox starts from when the request names no template. */
    snapshot: z.optional(z.string().check(z.minLength(1))),
    /** container (default) or linux-vm: only VM-class sandboxes pause with memory kept. */
    class: z._default(z.enum(['container', 'linux-vm']), 'container'),
    /** Preview URLs' lifetime. */
    portURLSeconds: z._default(z.int().check(z.gte(1), z.lte(86_400)), 3600),
    readyTimeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(900)), 180),
    pollIntervalMs: z._default(z.int().check(z.gte(10), z.lte(10_000)), 1000),
  }),
);
export type DaytonaConfig = z.infer<typeof daytonaConfigSchema>;
