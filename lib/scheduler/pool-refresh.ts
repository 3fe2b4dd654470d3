import { effectiveFeatures } from '../adapter/features.ts';
import type { Log } from '../log.ts';
import type { Pool, PoolRegistry } from '../pools/registry.ts';
import type { PoolStore } from '../store/pools/port.ts';
import type { PoolView } from '../store/records.ts';

export interface PoolRefreshDeps {
  pools: PoolRegistry;
  store: PoolStore;
  log: Log;
  now?: () => Date;
}

/** How long each probe (capabilities, health, capacity) may take before the pool counts as unhealthy. */
export const defaultProbeTimeoutMs = 5000;

/**
 * Probes every pool at once and stores what it learned (pool-refresh, every minute on AWS, every few
 * seconds locally). Each probe is bounded by its own timeout, enforced here even when an adapter ignores
 * its abort signal, so one hanging backend never delays the others' views.
 */
export async function refreshPools(
  deps: PoolRefreshDeps,
  options: { timeoutMs?: number } = {},
): Promise<PoolView[]> {
  await deps.pools.sync(true);
  const timeoutMs = options.timeoutMs ?? defaultProbeTimeoutMs;
  const views = await Promise.all(deps.pools.list().map((pool) => probe(deps, pool, timeoutMs)));
  for (const view of views) await deps.store.putPoolView(view);
  await deps.pools.sync(true);
  return views;
}

async function probe(deps: PoolRefreshDeps, pool: Pool, timeoutMs: number): Promise<PoolView> {
  const name = pool.config.name;
  const refreshedAt = (deps.now?.() ?? new Date()).toISOString();
  const previous = deps.pools.view(name);
  const adapter = pool.adapter;
  if (adapter === undefined) {
    return {
      pool: name,
      healthy: false,
      reason: `no adapter for kind ${pool.config.adapter} in this build${pool.problem ? ` (${pool.problem})` : ''}`,
      capabilities: null,
      capacity: null,
      refreshedAt,
      downSince: null,
      downReason: null,
    };
  }
  const [capabilities, health, capacity] = await Promise.allSettled([
    bounded(timeoutMs, (signal) => adapter.capabilities({ signal })),
    bounded(timeoutMs, (signal) => adapter.health({ signal })),
    bounded(timeoutMs, (signal) => adapter.capacity({ signal })),
  ]);
  const problems: string[] = [];
  let declared = previous?.capabilities ?? pool.capabilities;
  if (capabilities.status === 'fulfilled') {
    const features = effectiveFeatures(adapter, pool.declaredFeatures ?? capabilities.value.features);
    declared = { ...capabilities.value, features };
  } else problems.push(`capabilities: ${messageOf(capabilities.reason)}`);
  if (health.status === 'rejected') problems.push(`health: ${messageOf(health.reason)}`);
  if (capacity.status === 'rejected') problems.push(`capacity: ${messageOf(capacity.reason)}`);
  if (problems.length > 0) {
    deps.log.warn('pool probe failed', { pool: name, problems });
  }
  return {
    pool: name,
    // Only the health probe decides health; a capacity or capabilities failure is reported, not fatal.
    healthy: health.status === 'fulfilled',
    reason: problems.length === 0 ? null : problems.join('; '),
    capabilities: declared,
    capacity: capacity.status === 'fulfilled' ? capacity.value : (previous?.capacity ?? null),
    // refreshedAt is when the probe started: a down mark made while it ran stays in force.
    refreshedAt,
    downSince: null,
    downReason: null,
  };
}

/** Runs a call with an abort signal and gives up on it after `ms` whether or not it honours the signal. */
function bounded<T>(ms: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  return Promise.race([call(controller.signal), timeout]).finally(() => clearTimeout(timer));
}

function messageOf(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}
