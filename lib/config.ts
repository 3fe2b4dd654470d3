import { features, isKnownFeature } from './adapter/features.ts';
import { poolPricesSchema } from './budgets/prices.ts';
import { errors } from './errors.ts';
import { awsLimits } from './limits.ts';
import {
  defaultDenyAlways,
  destinationSchema,
  maxAllowEntries,
  networkPolicySchema,
} from './network/policy.ts';
import { idlePolicySchema, requestedResourcesSchema } from './schemas/sandbox-parts.ts';
import { warmSettingsSchema, warmTargetsSchema } from './schemas/warm-targets.ts';
import * as z from './zod.ts';

const poolNamePattern = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Environment variables that belong to the control plane or its runtime (its own settings, the AWS
 * session credentials of the function's role, the Lambda runtime's): no pool may name them, or a pool
 * would send them to an endpoint of the caller's choice.
 */
export const reservedEnvPrefixes = ['AWS_', 'DIFFERENTLY_', 'LAMBDA_', '_X_AMZN_', 'POWERTOOLS_'] as const;

/** Why a pool's credential reference is not allowed where it comes from, or undefined when it is. */
export function credentialRefProblem(
  ref: { env: string } | { secretArn: string },
  origin: 'config' | 'api',
  runtimePoolEnvPrefix: string,
): string | undefined {
  if ('env' in ref) {
    const reserved = reservedEnvPrefixes.find((prefix) => ref.env.toUpperCase().startsWith(prefix));
    if (reserved !== undefined)
      return `credentials.env may not name the control plane's or the runtime's own variables (${reserved}*)`;
    if (origin === 'api' && !ref.env.startsWith(runtimePoolEnvPrefix))
      return `pools added through the admin API may name only variables under ${runtimePoolEnvPrefix} (runtimePoolEnvPrefix)`;
    return undefined;
  }
  if (origin === 'api' && !ref.secretArn.includes(`:secret:${runtimePoolSecretName}`))
    return `pools added through the admin API may name only secrets under ${runtimePoolSecretName}`;
  return undefined;
}

/** Secrets of pools added through the admin API live under this name prefix (the functions' IAM grant). */
export const runtimePoolSecretName = 'differently/pools/';

export const credentialRefSchema = z.union([
  z.strictObject({
    env: z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')),
  }),
  z.strictObject({ secretArn: z.string().check(z.startsWith('arn:', 'a Secrets Manager secret ARN')) }),
]);

export const poolConfigSchema = z.strictObject({
  name: z
    .string()
    .check(z.regex(poolNamePattern, 'pool names are lower-case letters, digits and -, at most 63 long')),
  /**
   * The adapter kind. Which kinds exist, and which need devMode, is the adapters' registry
   * (adapters/kinds.ts): every entry point checks a config against it (poolConfigProblems).
   */
  adapter: z.string().check(z.minLength(1), z.maxLength(63)),
  trust: z._default(z.enum(['private', 'external']), 'private'),
  region: z.optional(z.string().check(z.minLength(1), z.maxLength(63))),
  /** 0: no limit beyond what the adapter's Capacity reports. */
  maxConcurrency: z._default(z.int().check(z.gte(0)), 0),
  costModel: z.optional(
    z.strictObject({ cpuHour: z.number().check(z.gte(0)), memoryGiBHour: z.number().check(z.gte(0)) }),
  ),
  /** What the pool's sandboxes cost against budgets (lib/budgets); absent: nothing. */
  prices: z.optional(poolPricesSchema),
  /** Adapter-specific settings, validated by the adapter's own schema when the pool is built. */
  config: z._default(z.record(z.string(), z.unknown()), {}),
  credentials: z.optional(credentialRefSchema),
  /** Declared features; the effective list drops those whose interface the adapter lacks. */
  features: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(64)))),
  /** Warm targets: instances kept ready for creates that match them (lib/warm/, docs/placement.md). */
  warm: z.optional(warmTargetsSchema),
});
export type PoolConfig = z.infer<typeof poolConfigSchema>;

/** The global placement policy: external pools receive work only when allowed and named here. */
export const placementPolicySchema = z.strictObject({
  allowExternal: z._default(z.boolean(), false),
  externalPools: z._default(
    z.array(z.string().check(z.minLength(1), z.maxLength(63))).check(z.maxLength(64)),
    [],
  ),
});
export type PlacementPolicy = z.infer<typeof placementPolicySchema>;

const featureNameSchema = z.string().check(
  z.refine(isKnownFeature, 'not a known feature name'),
  z.refine((name) => name !== features.isolationNone, 'isolation.none cannot be requested'),
);

/** A named bundle a create request can ask for with `profile`: capabilities, default resources, a classification. */
export const profileSchema = z.strictObject({
  description: z.optional(z.string().check(z.maxLength(1024))),
  capabilities: z._default(z.array(featureNameSchema), []),
  /** Defaults for the request's resources; what the request sets itself wins. */
  resources: z.optional(requestedResourcesSchema),
  classification: z.optional(z.string().check(z.minLength(1), z.maxLength(63))),
});
export type Profile = z.infer<typeof profileSchema>;

/** A data classification: whether work so classified may ever leave private pools. */
export const classificationSchema = z.strictObject({
  description: z.optional(z.string().check(z.maxLength(1024))),
  allowExternal: z.boolean(),
});

export const defaultClassifications = {
  public: { allowExternal: true, description: 'May run on external pools when the global policy allows it' },
  confidential: { allowExternal: false, description: 'Private pools only, whatever the global policy says' },
};

const nameKey = z
  .string()
  .check(z.regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'names are lower-case letters, digits and -'));

export const templateSchema = z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(128)),
  description: z.optional(z.string().check(z.maxLength(1024))),
  image: z.optional(z.string().check(z.maxLength(512))),
  /** The idle policy of its sandboxes that name none (before the org's default). */
  idle: z.optional(idlePolicySchema),
  /** The egress policy of its sandboxes that name none (before the installation's default). */
  network: z.optional(networkPolicySchema),
});

/**
 * The largest per-stream exec output cap: two streams JSON-escaped (an escape can double a byte on
 * average text; output is sanitised to valid UTF-8 first) plus the envelope stay under Lambda's limit.
 */
export const maxExecOutputBytes = Math.floor((awsLimits.maxBufferedResponseBytes - 64 * 1024) / 4);

export const configSchema = z
  .strictObject({
    /** Dev mode allows adapters without isolation (devhost, fake). Never on in production. */
    devMode: z._default(z.boolean(), false),
    pools: z._default(z.array(poolConfigSchema), []),
    templates: z._default(z.array(templateSchema), []),
    profiles: z._default(z.record(nameKey, profileSchema), {}),
    classifications: z._default(z.record(nameKey, classificationSchema), defaultClassifications),
    /**
     * The only environment variables a pool added through the admin API may take its credential from
     * (locally; on AWS such pools use secrets under differently/pools/). The operator opts variables in
     * by naming them under this prefix.
     */
    runtimePoolEnvPrefix: z._default(
      z.string().check(
        z.regex(/^[A-Za-z_][A-Za-z0-9_]*_$/, 'a variable-name prefix ending in _'),
        z.refine(
          (prefix) => !reservedEnvPrefixes.some((reserved) => prefix.toUpperCase().startsWith(reserved)),
          {
            message: `may not be under ${reservedEnvPrefixes.join(', ')}`,
          },
        ),
      ),
      'POOL_CREDENTIAL_',
    ),
    /**
     * The E2B-compatible API (docs/e2b.md): E2B's create names no pool, so its sandboxes are placed among
     * these pools (all permitted pools when unset), under the same policy as any create.
     */
    e2b: z._default(
      z.strictObject({
        allowedPools: z.optional(
          z.array(z.string().check(z.minLength(1), z.maxLength(63))).check(z.minLength(1), z.maxLength(32)),
        ),
        /**
         * The domain under which `<port>-<sandboxId>.<domain>` reaches a sandbox (getHost, signed file URLs,
         * envd without E2B_SANDBOX_URL): answered as each sandbox's `domain`; its hosts must reach this API
         * (on AWS a wildcard custom domain, docs/deploy.md). Unset: hosts are not routed, domain is null.
         */
        sandboxDomain: z.optional(
          z
            .string()
            .check(
              z.regex(
                /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(:\d{1,5})?$/,
                'a lower-case domain name, with a :port if the API listens on one',
              ),
            ),
        ),
        /**
         * E2B template names and what serves them: a Differently template (none: the installation's
         * default) and the capabilities its sandboxes ask for, such as `exec.stdin` for
         * `code-interpreter-v1`, whose kernel is an interactive process (docs/e2b.md).
         */
        templates: z._default(
          z.record(
            z.string().check(z.minLength(1), z.maxLength(128)),
            z.strictObject({
              template: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
              capabilities: z.optional(
                z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.maxLength(32)),
              ),
            }),
          ),
          {},
        ),
      }),
      { templates: {} },
    ),
    /**
     * Egress (docs/network.md): the policy of sandboxes whose request and template name none (unset: the
     * pool's own network), and the destinations no sandbox may reach whatever its policy says.
     */
    network: z._default(
      z.strictObject({
        default: z.optional(networkPolicySchema),
        denyAlways: z._default(z.array(destinationSchema).check(z.maxLength(maxAllowEntries)), [
          ...defaultDenyAlways,
        ]),
      }),
      { denyAlways: [...defaultDenyAlways] },
    ),
    /** Warm pools across the installation: what their instances may cost together (docs/placement.md). */
    warm: z._default(warmSettingsSchema, {}),
    /** The policy until an admin replaces it with PUT /v1/admin/policy (then the stored one rules). */
    policy: z._default(placementPolicySchema, { allowExternal: false, externalPools: [] }),
    scheduler: z._default(
      z.strictObject({
        maxAttempts: z._default(z.int().check(z.gte(1), z.lte(20)), 3),
        provisionTimeoutSeconds: z._default(z.int().check(z.gte(5), z.lte(900)), 120),
        terminateTimeoutSeconds: z._default(z.int().check(z.gte(5), z.lte(900)), 60),
        /**
         * The longest a stop, start, pause, resume or snapshot may take on the backend. The operations
         * worker runs it (the API waits only briefly, see api.operationWaitSeconds); with the worker's own
         * margin it stays within Lambda's 15 minutes.
         */
        operationTimeoutSeconds: z._default(z.int().check(z.gte(5), z.lte(840)), 600),
        /** A queued sandbox idle this long has lost its provision message: the sweep sends a new one. */
        lostMessageSeconds: z._default(z.int().check(z.gte(60), z.lte(86_400)), 300),
        /** A termination idle this long is stuck: the sweep sends a new terminate message. */
        stuckTerminationSeconds: z._default(z.int().check(z.gte(60), z.lte(86_400)), 600),
        /** The reconciler leaves sandboxes changed this recently alone: a lifecycle call may be in flight. */
        reconcileGraceSeconds: z._default(z.int().check(z.gte(1), z.lte(3600)), 30),
      }),
      {
        maxAttempts: 3,
        provisionTimeoutSeconds: 120,
        terminateTimeoutSeconds: 60,
        operationTimeoutSeconds: 600,
        lostMessageSeconds: 300,
        stuckTerminationSeconds: 600,
        reconcileGraceSeconds: 30,
      },
    ),
    api: z._default(
      z.strictObject({
        /**
         * The longest command the synchronous exec may run. API Gateway's integration timeout is 29 s,
         * so the default leaves margin; longer commands use the streamed form.
         */
        syncExecMaxSeconds: z._default(z.int().check(z.gte(1), z.lte(900)), 25),
        /**
         * Cap on each of stdout and stderr returned by a synchronous exec, for every adapter (the rest is
         * cut and `truncated` set). Both at their cap, JSON-escaped, must fit Lambda's 6 MB response.
         */
        execOutputMaxBytes: z._default(
          z.int().check(
            z.gte(1024),
            z.lte(maxExecOutputBytes, {
              error: `stdout and stderr at this cap could exceed Lambda's ${awsLimits.maxBufferedResponseBytes}-byte response limit; at most ${maxExecOutputBytes}`,
            }),
          ),
          1024 * 1024,
        ),
        /**
         * How long a lifecycle call or snapshot waits for the operations worker before answering 202 with
         * the transitional record. Well inside API Gateway's 29 s.
         */
        operationWaitSeconds: z._default(
          z.number().check(z.gte(0), z.lte(awsLimits.apiIntegrationTimeoutSeconds - 9)),
          10,
        ),
        /**
         * How long an E2B create (lib/e2b) holds its request for the sandbox to run before it removes
         * it and answers 429 with Retry-After (docs/e2b.md). Inside API Gateway's 29 s.
         */
        e2bCreateWaitSeconds: z._default(
          z.number().check(z.gte(1), z.lte(awsLimits.apiIntegrationTimeoutSeconds - 4)),
          20,
        ),
      }),
      {
        syncExecMaxSeconds: 25,
        execOutputMaxBytes: 1024 * 1024,
        operationWaitSeconds: 10,
        e2bCreateWaitSeconds: 20,
      },
    ),
  })
  .check(
    z.superRefine((config, ctx) => {
      for (const [name, profile] of Object.entries(config.profiles)) {
        if (profile.classification !== undefined && !(profile.classification in config.classifications)) {
          ctx.addIssue({
            code: 'custom',
            path: ['profiles', name, 'classification'],
            message: `no classification named ${profile.classification}`,
          });
        }
      }
      const templateNames = new Set(config.templates.map((template) => template.name));
      for (const [name, mapping] of Object.entries(config.e2b.templates)) {
        if (mapping.template !== undefined && !templateNames.has(mapping.template)) {
          ctx.addIssue({
            code: 'custom',
            path: ['e2b', 'templates', name, 'template'],
            message: `no template named ${mapping.template}`,
          });
        }
      }
      const seen = new Set<string>();
      config.pools.forEach((pool, index) => {
        if (seen.has(pool.name)) {
          ctx.addIssue({
            code: 'custom',
            path: ['pools', index, 'name'],
            message: `pool ${pool.name} is defined twice`,
          });
        }
        seen.add(pool.name);
        const problem =
          pool.credentials === undefined
            ? undefined
            : credentialRefProblem(pool.credentials, 'config', config.runtimePoolEnvPrefix);
        if (problem !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['pools', index, 'credentials'], message: problem });
        }
      });
    }),
  );
export type Config = z.infer<typeof configSchema>;

/** `pools[0].adapter: message; scheduler.maxAttempts: message`: every problem, each naming its field. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return describeIssues(issues)
    .map((issue) => `${issue.path}: ${issue.message}`)
    .join('; ');
}

/** Issues as `{path, message}`; an unknown field is reported at its own path, not at its parent's. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): { path: string; message: string }[] {
  return issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: 'unknown field' }))
      : [{ path: formatPath(issue.path), message: issue.message }],
  );
}

export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((part, index) =>
      typeof part === 'number' ? `[${part}]` : index === 0 ? String(part) : `.${String(part)}`,
    )
    .join('');
}

export function parseConfig(input: unknown, source = 'config'): Config {
  const result = configSchema.safeParse(input);
  if (!result.success) {
    throw errors.invalidRequest(`${source} is not valid: ${formatIssues(result.error.issues)}`, {
      issues: describeIssues(result.error.issues),
    });
  }
  return result.data;
}

/** Parses JSON text without trusting its shape: the result goes through parseConfig. */
export function parseConfigText(text: string, source = 'config'): Config {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw errors.invalidRequest(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  return parseConfig(raw, source);
}
