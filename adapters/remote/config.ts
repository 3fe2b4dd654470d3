import * as z from '../../lib/zod.ts';

/**
 * A remote pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const remoteConfigSchema = z.lazy(() =>
  z.strictObject({
    /** The plugin server's base URL (the protocol's routes live under /adapter/v1). */
    endpoint: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
    /** Upper bound on one request; the caller's own deadline applies first. Default 2 h 15 min. */
    timeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(24 * 3600)), 8100),
  }),
);
export type RemoteConfig = z.infer<typeof remoteConfigSchema>;
