import * as z from '../../lib/zod.ts';

/**
 * A freestyle pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const freestyleConfigSchema = z.lazy(() =>
  z.strictObject({
    apiURL: z._default(z.url({ protocol: /^https?$/, error: 'an http(s) URL' }), 'https://api.freestyle.sh'),
    /** The base snapshot a VM boots from when the request names no template (its size is the VM's). */
    snapshot: z._default(z.string().check(z.minLength(1)), 'freestyle/ubuntu-sm'),
    /** none: the VM has no outbound network (Freestyle's default-deny firewall); public: outbound allowed. */
    egress: z._default(z.enum(['none', 'public']), 'none'),
    /** Port URLs are TLS rules on <port>-<slug>.<domain>: a verified domain, or style.dev. */
    domain: z._default(z.string().check(z.minLength(1)), 'style.dev'),
    readyTimeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(900)), 180),
    pollIntervalMs: z._default(z.int().check(z.gte(10), z.lte(10_000)), 2000),
  }),
);
export type FreestyleConfig = z.infer<typeof freestyleConfigSchema>;
