import * as z from '../../lib/zod.ts';

/**
 * A opensandbox pool's `config`: what preflight, synth, the cold start and the admin API check. Kept apart from
 * the adapter so validating a config never loads the adapter itself (adapters/kinds.ts loads it on first use).
 */
export const openSandboxConfigSchema = z.lazy(() =>
  z.strictObject({
    /** The lifecycle server, e.g. http://opensandbox.internal:8080 (routes under /v1). */
    apiURL: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
    /** The image a sandbox runs when the request names no template. */
    image: z._default(z.string().check(z.minLength(1)), 'ubuntu:24.04'),
    /** A pre-configured OpenSandbox pool (extensions.poolRef): the pool then offers only this template. */
    templateId: z.optional(z.string().check(z.minLength(1))),
    /** What the runtime isolates with, as declared by the operator (reported, not checked). */
    isolation: z._default(z.enum(['container', 'microvm']), 'container'),
    /** docker: pause freezes (pause-resume); kubernetes: pause commits the rootfs and frees the pod (stop-start). */
    runtime: z._default(z.enum(['docker', 'kubernetes']), 'docker'),
    /** Extra declared features, e.g. snapshots.memory where the runtime captures memory. */
    features: z._default(z.array(z.string()), []),
    /** Reach execd through the lifecycle server's proxy instead of the endpoint directly. */
    useServerProxy: z._default(z.boolean(), false),
    /** lf: turn CRLF output into LF (Windows images). */
    lineEndings: z._default(z.enum(['preserve', 'lf']), 'preserve'),
    /**
     * open: no egress policy; none: deny all; allowlist: only egressAllow (FQDN or *.wildcard), all three
     * for the whole pool; per-sandbox: the server has the egress sidecar, and each sandbox's own policy
     * (deny, or an allow-list of domains) is sent with its create (docs/network.md).
     */
    egress: z._default(z.enum(['open', 'none', 'allowlist', 'per-sandbox']), 'open'),
    egressAllow: z._default(z.array(z.string().check(z.minLength(1))).check(z.maxLength(4096)), []),
    /** signed: time-limited URLs through the ingress gateway (Kubernetes, secure access). */
    ports: z._default(z.enum(['none', 'signed']), 'none'),
    portScheme: z._default(z.enum(['http', 'https']), 'https'),
    portURLSeconds: z._default(z.int().check(z.gte(60), z.lte(7 * 24 * 3600)), 3600),
    /** How long Create waits for Running and execd. The scheduler's provision timeout bounds it first. */
    readyTimeoutSeconds: z._default(z.int().check(z.gte(1), z.lte(900)), 180),
    pollIntervalMs: z._default(z.int().check(z.gte(10), z.lte(10_000)), 500),
  }),
);
export type OpenSandboxConfig = z.infer<typeof openSandboxConfigSchema>;
