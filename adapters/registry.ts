import type { z } from 'zod';
import { type ExecutionAdapter, effectiveFeatures } from '../lib/adapter/contract.ts';
import { type Config, formatIssues, type PoolConfig } from '../lib/config.ts';
import { type CredentialResolver, credentialResolver } from '../lib/credentials.ts';
import { errors } from '../lib/errors.ts';
import { describeError, type Log } from '../lib/log.ts';
import { type Pool, PoolRegistry } from '../lib/pools.ts';
import { DevhostAdapter, devhostConfigSchema } from './devhost/devhost-adapter.ts';
import { FakeAdapter } from './fake/fake-adapter.ts';

/** Builds a pool's adapter from its config and, when the pool references one, its resolved credential. */
type AdapterFactory = (pool: PoolConfig, credential: string | undefined) => ExecutionAdapter;

function configOf<S extends z.ZodType>(pool: PoolConfig, schema: S): z.infer<S> {
  const parsed = schema.safeParse(pool.config);
  if (!parsed.success) {
    throw errors.invalidRequest(
      `pool ${pool.name}: config is not valid: ${formatIssues(parsed.error.issues)}`,
      {
        pool: pool.name,
      },
    );
  }
  return parsed.data;
}

/** The adapter kinds this build can construct. */
export const adapterFactories: Record<string, AdapterFactory> = {
  devhost: (pool) => new DevhostAdapter(configOf(pool, devhostConfigSchema)),
  fake: () => new FakeAdapter(),
};

export interface BuildPoolsOptions {
  log: Log;
  /** Resolves credential references; a pool whose reference does not resolve starts unhealthy, without an adapter. */
  resolveCredential?: CredentialResolver;
  /** Pre-built adapters by pool name, for tests and the local runtime's injected fakes. */
  adapters?: Record<string, ExecutionAdapter>;
}

/**
 * Builds every configured pool's adapter and reads its declared features once. A pool whose
 * capabilities cannot be read starts with the features its config declares and is marked unhealthy.
 */
export async function buildPools(config: Config, options: BuildPoolsOptions): Promise<PoolRegistry> {
  const pools: Pool[] = [];
  const unreachable: string[] = [];
  for (const poolConfig of config.pools) {
    const factory = adapterFactories[poolConfig.adapter];
    let credential: string | undefined;
    if (poolConfig.credentials !== undefined && options.adapters?.[poolConfig.name] === undefined) {
      try {
        credential = await (options.resolveCredential ?? credentialResolver())(
          poolConfig.credentials,
          poolConfig.name,
        );
      } catch (error) {
        // Named, never echoed: the message says which reference failed, not any value.
        options.log.error('pool credentials could not be resolved; the pool has no adapter', {
          pool: poolConfig.name,
          error: describeError(error),
        });
        pools.push({ config: { ...poolConfig, features: poolConfig.features ?? [] }, adapter: undefined });
        continue;
      }
    }
    const adapter = options.adapters?.[poolConfig.name] ?? factory?.(poolConfig, credential);
    let features = poolConfig.features ?? [];
    if (adapter !== undefined) {
      try {
        const capabilities = await adapter.capabilities({ signal: AbortSignal.timeout(5000) });
        features = effectiveFeatures(adapter, poolConfig.features ?? capabilities.features);
      } catch (error) {
        options.log.warn('pool capabilities could not be read', {
          pool: poolConfig.name,
          error: describeError(error),
        });
        unreachable.push(poolConfig.name);
      }
    }
    pools.push({ config: { ...poolConfig, features }, adapter });
  }
  const registry = new PoolRegistry(pools);
  for (const name of unreachable) registry.markUnhealthy(name, 30_000);
  return registry;
}
