import { freePrices } from '../budgets/prices.ts';
import type { Config } from '../config.ts';
import type { Pool, PoolRegistry } from '../pools/registry.ts';
import type { WarmStore } from '../store/warm/port.ts';
import { warmStatusOf } from '../warm/status.ts';

/**
 * The trust report (GET /v1/trust): for each pool, who operates it, the isolation it declares and
 * whether anything verifies it, what it really offers, what it does not do, and whether external work
 * can reach it under the policy in force. Tenants read it to decide what to send where.
 */
export async function trustReport(
  pools: PoolRegistry,
  config: Config,
  store: Pick<WarmStore, 'listWarm'>,
  now = new Date(),
) {
  // Read fresh (three reads): a report must not show another container's cached pools or policy.
  await pools.sync(true);
  const policy = pools.policy();
  const receives = (pool: Pool) =>
    pool.config.trust === 'private' ||
    (policy.allowExternal && policy.externalPools.includes(pool.config.name));
  const entries = await Promise.all(
    pools.list().map(async (pool) => {
      const info = pool.adapter?.info();
      const health = pools.health(pool.config.name, now.getTime());
      const limitations = [...(info?.limitations ?? [])];
      if (pool.adapter === undefined) {
        limitations.unshift(
          `no adapter in this build for kind ${pool.config.adapter}: the pool cannot run or reach sandboxes`,
        );
      }
      if (pool.config.trust === 'external' && !receives(pool)) {
        limitations.push('external pool not enabled by the placement policy: it receives no work');
      }
      return {
        name: pool.config.name,
        adapter: pool.config.adapter,
        trust: pool.config.trust,
        region: pool.config.region ?? null,
        isolation: info?.isolation ?? 'unknown (no adapter)',
        isolationVerified: info?.isolationVerified ?? false,
        features: pools.featuresOf(pool.config.name),
        healthy: health.healthy,
        limitations,
        prices: pool.config.prices ?? freePrices,
        receivesExternalWork: pool.config.trust === 'external' && receives(pool),
        egress: egressEnforced(pools.featuresOf(pool.config.name)),
        warm: await warmStatusOf(store, pool, config, now),
      };
    }),
  );
  return {
    policy: { ...policy, source: pools.policySource() },
    pools: entries,
    externalPoolsInUse: entries.filter((entry) => entry.receivesExternalWork).map((entry) => entry.name),
    network: { default: config.network.default ?? null, denyAlways: config.network.denyAlways },
    classifications: config.classifications,
    generatedAt: now.toISOString(),
  };
}

const egressKinds = ['allow', 'deny', 'allowlist', 'domains', 'ports'] as const;

/** The egress policies a pool's features say it enforces per sandbox, in a fixed order. */
function egressEnforced(features: readonly string[]): (typeof egressKinds)[number][] {
  return egressKinds.filter((kind) => features.includes(`network.egress.${kind}`));
}
