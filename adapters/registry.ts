import { effectiveFeatures } from '../lib/adapter/features.ts';
import type { ExecutionAdapter } from '../lib/adapter/port.ts';
import { type Config, credentialRefProblem, formatIssues, poolConfigSchema } from '../lib/config.ts';
import { errors } from '../lib/errors.ts';
import { describeError, type Log } from '../lib/log.ts';
import { type CredentialResolver, credentialResolver } from '../lib/pools/credentials.ts';
import { type Pool, type PoolBuilder, PoolRegistry, type PoolSpec } from '../lib/pools/registry.ts';
import type { Store } from '../lib/store/port.ts';
import { adapterKind, buildAdapter, poolKindProblems } from './kinds.ts';
import { type AdapterCallTracer, tracedAdapter } from './traced-adapter.ts';

export interface BuildPoolsOptions {
  log: Log;
  /** Resolves credential references; a pool whose reference does not resolve starts unhealthy, without an adapter. */
  resolveCredential?: CredentialResolver;
  /** Pre-built adapters by pool name, for tests and the local runtime's injected fakes. */
  adapters?: Record<string, ExecutionAdapter>;
  /** Where pools added through the admin API live; without it only the config file's pools exist. */
  store?: Store;
  /** Capabilities probe timeout while building. */
  probeTimeoutMs?: number;
  /** Traces every backend call (Powertools' Tracer on Lambda); unset, calls go straight to the adapter. */
  traceAdapterCall?: AdapterCallTracer;
}

/**
 * Builds one pool: resolves its credential, constructs its adapter and reads its capabilities once.
 * Bad settings and credential references that do not resolve throw invalid_request (the admin API's 400);
 * a backend that does not answer is not an error here: the pool starts with its declared features.
 */
export async function buildPool(
  given: PoolSpec,
  options: BuildPoolsOptions,
): Promise<Pool & { reachable: boolean }> {
  const kind = adapterKind(given.adapter);
  const spec: PoolSpec = kind?.runs === 'external' ? { ...given, trust: 'external' } : given;
  const injected = options.adapters?.[spec.name];
  if (injected === undefined && kind === undefined) {
    throw errors.invalidRequest(`pool ${spec.name}: this build has no adapter of kind ${spec.adapter}`, {
      pool: spec.name,
      adapter: spec.adapter,
    });
  }
  let credential: string | undefined;
  if (spec.credentials !== undefined && injected === undefined) {
    credential = await (options.resolveCredential ?? credentialResolver())(spec.credentials, spec.name);
  }
  const built = injected ?? (await buildAdapter(spec, credential));
  if (built === undefined) throw errors.internal(`pool ${spec.name}: no adapter`);
  const adapter =
    options.traceAdapterCall === undefined
      ? built
      : tracedAdapter(built, spec.name, spec.adapter, options.traceAdapterCall);
  try {
    const capabilities = await adapter.capabilities({
      signal: AbortSignal.timeout(options.probeTimeoutMs ?? 5000),
    });
    const features = effectiveFeatures(adapter, spec.features ?? capabilities.features);
    return {
      config: { ...spec, features },
      declaredFeatures: spec.features,
      adapter,
      capabilities: { ...capabilities, features },
      source: 'config',
      reachable: true,
    };
  } catch (error) {
    options.log.warn('pool capabilities could not be read', { pool: spec.name, error: describeError(error) });
    return {
      config: { ...spec, features: effectiveFeatures(adapter, spec.features ?? []) },
      declaredFeatures: spec.features,
      adapter,
      capabilities: null,
      source: 'config',
      reachable: false,
    };
  }
}

/** The builder a registry uses for pools added at runtime: the same strict checks as the config file's. */
export function poolBuilder(config: Config, options: BuildPoolsOptions): PoolBuilder {
  return async (spec) => {
    const parsed = poolConfigSchema.safeParse(spec);
    if (!parsed.success) {
      throw errors.invalidRequest(`pool ${spec.name}: ${formatIssues(parsed.error.issues)}`, {
        pool: spec.name,
      });
    }
    const refused =
      spec.credentials === undefined
        ? undefined
        : credentialRefProblem(spec.credentials, 'api', config.runtimePoolEnvPrefix);
    if (refused !== undefined) {
      throw errors.invalidRequest(`pool ${spec.name}: credentials: ${refused}`, {
        pool: spec.name,
        field: 'credentials',
      });
    }
    const [kindProblem] = poolKindProblems(spec, config.devMode);
    if (kindProblem !== undefined) {
      throw errors.invalidRequest(`pool ${spec.name}: ${kindProblem.message}`, {
        pool: spec.name,
        field: kindProblem.field,
      });
    }
    const { reachable: _reachable, ...pool } = await buildPool(spec, options);
    return { ...pool, source: 'api' };
  };
}

/**
 * Builds every configured pool. A pool whose credential does not resolve starts without an adapter (and
 * so unhealthy, with the reason); one whose capabilities cannot be read starts with its declared features
 * and is marked unhealthy until the next probe. The pools are built side by side, in the config's order:
 * each may wait on its credential (Secrets Manager) and its capabilities probe (a remote plugin's answer, up
 * to the probe timeout), and a cold start waits for the slowest of them, not for their sum.
 */
export async function buildPools(config: Config, options: BuildPoolsOptions): Promise<PoolRegistry> {
  const built = await Promise.all(
    config.pools.map(async (spec): Promise<{ pool: Pool; unreachable: boolean }> => {
      try {
        const { reachable, ...pool } = await buildPool(spec, options);
        return { pool, unreachable: !reachable };
      } catch (error) {
        // Named, never echoed: the message says which reference failed, not any value.
        options.log.error('pool could not be built; it has no adapter', {
          pool: spec.name,
          error: describeError(error),
        });
        const pool: Pool = {
          config: { ...spec, features: spec.features ?? [] },
          adapter: undefined,
          problem: (error as Error).message,
          capabilities: null,
          source: 'config',
        };
        return { pool, unreachable: false };
      }
    }),
  );
  const pools = built.map(({ pool }) => pool);
  const unreachable = built.filter((entry) => entry.unreachable).map(({ pool }) => pool.config.name);
  if (unreachable.length > 0) {
    // Not marked down from here: health is shared state, decided by probes and adapter errors (lib/pools/registry.ts).
    options.log.warn('pools unreachable at cold start; their features come from the next probe', {
      pools: unreachable,
    });
  }
  return new PoolRegistry(pools, {
    ...(options.store !== undefined && { store: options.store }),
    build: poolBuilder(config, options),
    policy: config.policy,
  });
}
