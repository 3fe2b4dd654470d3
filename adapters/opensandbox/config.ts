import * as z from 'zod';

/**
 * A opensandbox pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const openSandboxConfigSchema = z.strictObject({
  /** The lifecycle server, e.g. http://opensandbox.internal:8080 (routes under /v1). */
  apiURL: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
  /** The image a sandbox runs when the request names no template. */
  image: z.string().min(1).default('ubuntu:24.04'),
  /** A pre-configured OpenSandbox pool (extensions.poolRef): the pool then offers only this template. */
  templateId: z.string().min(1).optional(),
  /** What the runtime isolates with, as declared by the operator (reported, not checked). */
  isolation: z.enum(['container', 'microvm']).default('container'),
  /** docker: pause freezes (pause-resume); kubernetes: pause commits the rootfs and frees the pod (stop-start). */
  runtime: z.enum(['docker', 'kubernetes']).default('docker'),
  /** Extra declared features, e.g. snapshots.memory where the runtime captures memory. */
  features: z.array(z.string()).default([]),
  /** Reach execd through the lifecycle server's proxy instead of the endpoint directly. */
  useServerProxy: z.boolean().default(false),
  /** lf: turn CRLF output into LF (Windows images). */
  lineEndings: z.enum(['preserve', 'lf']).default('preserve'),
  /** open: no egress policy; none: deny all; allowlist: only egressAllow (FQDN or *.wildcard). */
  egress: z.enum(['open', 'none', 'allowlist']).default('open'),
  egressAllow: z.array(z.string().min(1)).max(4096).default([]),
  /** signed: time-limited URLs through the ingress gateway (Kubernetes, secure access). */
  ports: z.enum(['none', 'signed']).default('none'),
  portScheme: z.enum(['http', 'https']).default('https'),
  portURLSeconds: z
    .int()
    .min(60)
    .max(7 * 24 * 3600)
    .default(3600),
  /** How long Create waits for Running and execd. The scheduler's provision timeout bounds it first. */
  readyTimeoutSeconds: z.int().min(1).max(900).default(180),
  pollIntervalMs: z.int().min(10).max(10_000).default(500),
});
export type OpenSandboxConfig = z.infer<typeof openSandboxConfigSchema>;
