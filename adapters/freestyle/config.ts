import * as z from 'zod';

/**
 * A freestyle pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const freestyleConfigSchema = z.strictObject({
  apiURL: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).default('https://api.freestyle.sh'),
  /** The base snapshot a VM boots from when the request names no template (its size is the VM's). */
  snapshot: z.string().min(1).default('freestyle/ubuntu-sm'),
  /** none: the VM has no outbound network (Freestyle's default-deny firewall); public: outbound allowed. */
  egress: z.enum(['none', 'public']).default('none'),
  /** Port URLs are TLS rules on <port>-<slug>.<domain>: a verified domain, or style.dev. */
  domain: z.string().min(1).default('style.dev'),
  readyTimeoutSeconds: z.int().min(1).max(900).default(180),
  pollIntervalMs: z.int().min(10).max(10_000).default(2000),
});
export type FreestyleConfig = z.infer<typeof freestyleConfigSchema>;
