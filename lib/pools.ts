import type { ExecutionAdapter } from './adapter/contract.ts';
import type { PoolConfig } from './config.ts';
import { errors } from './errors.ts';

export interface Pool {
  config: PoolConfig;
  /** Absent when this build has no adapter for the pool's kind (the seeds' E0.22 case). */
  adapter: ExecutionAdapter | undefined;
}

/**
 * The pools a control plane instance knows, in the operator's order. Health here is the fast path an
 * adapter error takes (a provider_unavailable marks the pool unhealthy at once); pool-refresh owns the
 * stored view.
 */
export class PoolRegistry {
  readonly #pools = new Map<string, Pool>();
  readonly #unhealthyUntil = new Map<string, number>();

  constructor(pools: Pool[]) {
    for (const pool of pools) this.#pools.set(pool.config.name, pool);
  }

  list(): Pool[] {
    return [...this.#pools.values()];
  }

  get(name: string): Pool | undefined {
    return this.#pools.get(name);
  }

  /** The adapter of a pool, or the reason there is none, as an ApiError. */
  adapterOf(name: string): ExecutionAdapter {
    const pool = this.#pools.get(name);
    if (pool === undefined) throw errors.providerUnavailable(`pool ${name} no longer exists`, { pool: name });
    if (pool.adapter === undefined) {
      throw errors.providerUnavailable(
        `pool ${name} has no adapter in this build (kind ${pool.config.adapter})`,
        {
          pool: name,
          adapter: pool.config.adapter,
        },
      );
    }
    return pool.adapter;
  }

  markUnhealthy(name: string, forMs: number, now = Date.now()): void {
    this.#unhealthyUntil.set(name, now + forMs);
  }

  isHealthy(name: string, now = Date.now()): boolean {
    return (this.#unhealthyUntil.get(name) ?? 0) <= now;
  }
}
