import { effectiveFeatures } from '../adapter/contract.ts';
import type { Pool, PoolRegistry } from '../pools.ts';
import type { SandboxRecord } from '../store/records.ts';

export interface RankedPools {
  candidates: Pool[];
  rejected: { pool: string; reason: string }[];
}

/**
 * The foundation's placement: pools the request allows, that have an adapter, advertise every
 * requested capability and are healthy, in the operator's order. The policy issue replaces the
 * ranking (trust, region, cost, room); the shape of the decision stays.
 */
export function rankPools(record: SandboxRecord, pools: PoolRegistry, now = Date.now()): RankedPools {
  const candidates: Pool[] = [];
  const rejected: { pool: string; reason: string }[] = [];
  for (const pool of pools.list()) {
    const name = pool.config.name;
    if (record.allowedPools !== null && !record.allowedPools.includes(name)) continue;
    if (pool.adapter === undefined) {
      rejected.push({ pool: name, reason: `no adapter for kind ${pool.config.adapter} in this build` });
      continue;
    }
    const offered = effectiveFeatures(pool.adapter, pool.config.features ?? []);
    const missing = record.capabilities.filter((feature) => !offered.includes(feature));
    if (missing.length > 0) {
      rejected.push({ pool: name, reason: `missing capabilities: ${missing.join(', ')}` });
      continue;
    }
    if (!pools.isHealthy(name, now)) {
      rejected.push({ pool: name, reason: 'unhealthy' });
      continue;
    }
    candidates.push(pool);
  }
  return { candidates, rejected };
}
