import type { ExecutionAdapter } from '../adapter/port.ts';
import type { PoolConfig } from '../config.ts';

/**
 * What warm pools read of a pool: its settings (targets, prices, maxConcurrency) and its adapter. The
 * pool registry (lib/pools/registry.ts) is one; named here so lib/warm needs nothing of lib/pools, whose
 * admin API shows what lib/warm counts.
 */
export interface WarmPool {
  config: Pick<PoolConfig, 'name' | 'warm' | 'prices' | 'maxConcurrency'>;
  adapter: ExecutionAdapter | undefined;
}

/** The pools as warm pools see them: the registry satisfies it. */
export interface WarmPools {
  /** Reads the pools again (those added or changed through the admin API since this container looked). */
  sync(force?: boolean): Promise<void>;
  list(): WarmPool[];
  get(name: string): WarmPool | undefined;
  isHealthy(name: string): boolean;
}
