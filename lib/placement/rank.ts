import type { Config } from '../config.ts';
import type { Pool, PoolRegistry } from '../pools/registry.ts';
import type { PoolStore } from '../store/pools/port.ts';
import type { SandboxRecord } from '../store/records.ts';
import { type Placement, type PlacementRequest, type PoolState, place } from './policy.ts';

export function placementRequestOf(
  record: Pick<
    SandboxRecord,
    'capabilities' | 'template' | 'resources' | 'allowedPools' | 'regions' | 'classification'
  >,
): PlacementRequest {
  return {
    capabilities: record.capabilities,
    template: record.template,
    resources: record.resources,
    allowedPools: record.allowedPools,
    regions: record.regions,
    classification: record.classification,
  };
}

/**
 * Each pool as placement sees it: effective features, declared limits (the refreshed view's when there
 * is one), health and capacity from pool-refresh and this container's own observations.
 */
function stateOf(pools: PoolRegistry, pool: Pool, now: number, active: number | null): PoolState {
  const name = pool.config.name;
  const view = pools.view(name);
  const health = pools.health(name, now);
  const capabilities = view?.capabilities ?? pool.capabilities;
  return {
    config: pool.config,
    features: pools.featuresOf(name),
    capabilities,
    healthy: health.healthy,
    unhealthyReason: health.reason,
    capacity: view?.capacity ?? null,
    active,
  };
}

/** Every pool's state without store reads (active counts unknown): admission's static check. */
export function poolStatesNow(pools: PoolRegistry, now = Date.now()): PoolState[] {
  return pools.list().map((pool) => stateOf(pools, pool, now, null));
}

/** Every pool's state, with the active count read for pools bounded by maxConcurrency. */
export async function poolStates(
  pools: PoolRegistry,
  store: PoolStore,
  now = Date.now(),
): Promise<{ pool: Pool; state: PoolState }[]> {
  return Promise.all(
    pools.list().map(async (pool) => {
      const active = pool.config.maxConcurrency > 0 ? await store.getPoolUsage(pool.config.name) : null;
      return { pool, state: stateOf(pools, pool, now, active) };
    }),
  );
}

export interface RankedPools {
  candidates: Pool[];
  placement: Placement;
}

/**
 * The scheduler's placement of one sandbox: the permitted, eligible pools in the order to try them. The
 * registry must be current, whichever container this is: a policy or pool changed through another
 * container moments ago must rule this placement (an external pool just disallowed must not receive
 * work), and so must a pool another container marked down. The caller synced it to the pools' version it
 * read with the sandbox (`synced`), or it is read here.
 */
export async function rankPools(
  record: SandboxRecord,
  deps: { pools: PoolRegistry; store: PoolStore; config: Config },
  now = Date.now(),
  options: { synced?: boolean } = {},
): Promise<RankedPools> {
  if (options.synced !== true) await deps.pools.sync(true);
  const { states, placement } = await placeNow(record, deps, now);
  const byName = new Map(states.map((s) => [s.pool.config.name, s.pool]));
  const candidates = placement.ranked.flatMap((state) => {
    const pool = byName.get(state.config.name);
    return pool === undefined ? [] : [pool];
  });
  return { candidates, placement };
}

async function placeNow(
  record: SandboxRecord,
  deps: { pools: PoolRegistry; store: PoolStore; config: Config },
  now: number,
) {
  const states = await poolStates(deps.pools, deps.store, now);
  const placement = place(
    placementRequestOf(record),
    states.map((s) => s.state),
    {
      policy: deps.pools.policy(),
      classifications: deps.config.classifications,
    },
  );
  return { states, placement };
}
