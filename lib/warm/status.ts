import { fromMicros, ratesOf } from '../budgets/prices.ts';
import type { WarmTargetStatus } from '../schemas/warm-targets.ts';
import type { WarmStore } from '../store/warm/port.ts';
import type { WarmPool } from './pools.ts';
import { type ShapeContext, shapeKey, targetShape } from './shape.ts';
import { sizeNow } from './targets.ts';

/** Each warm target of a pool with its instances counted (one Query of the pool's warm partition). */
export async function warmStatusOf(
  store: Pick<WarmStore, 'listWarm'>,
  pool: WarmPool,
  context: ShapeContext,
  now: Date,
): Promise<WarmTargetStatus[]> {
  const targets = pool.config.warm ?? [];
  if (targets.length === 0) return [];
  const records = await store.listWarm(pool.config.name);
  return targets.map((target) => {
    const shape = targetShape(target, context);
    const key = shapeKey(shape);
    const mine = records.filter((record) => record.shape === key);
    const ready = mine.filter((record) => record.status === 'ready').length;
    const rates = ratesOf(pool.config.prices, shape.resources);
    const each = fromMicros(rates.running * 3600);
    const spent = mine.reduce(
      (total, record) =>
        total +
        rates.create +
        (rates.running * Math.max(0, now.getTime() - Date.parse(record.createdAt))) / 1000,
      0,
    );
    return {
      template: shape.template,
      resources: shape.resources,
      egress: shape.network?.egress ?? null,
      size: target.size,
      sizeNow: sizeNow(target, now),
      maxAgeSeconds: target.maxAgeSeconds,
      ...(target.windows !== undefined && { windows: target.windows }),
      ready,
      provisioning: mine.length - ready,
      hourlyCost: Math.round(each * mine.length * 1e6) / 1e6,
      costSoFar: Math.round(fromMicros(spent) * 1e6) / 1e6,
    };
  });
}
