import { z } from 'zod';
import type { ControlPlane } from '../lib/control-plane.ts';
import { refreshPools } from '../lib/scheduler/pool-refresh.ts';
import type { PoolView } from '../lib/store/records.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** What the EventBridge Scheduler schedule sends (its target input); anything else is refused. */
export const poolRefreshEventSchema = z.object({
  source: z.literal('differently.schedule'),
  task: z.literal('pool-refresh'),
});

export interface PoolRefreshReport {
  pools: { pool: string; healthy: boolean; reason: string | null }[];
}

export function createPoolRefreshHandler(plane: ControlPlane) {
  return async (event: unknown): Promise<PoolRefreshReport> => {
    if (!poolRefreshEventSchema.safeParse(event).success) {
      throw new Error('pool-refresh expects {"source":"differently.schedule","task":"pool-refresh"}');
    }
    const views: PoolView[] = await refreshPools(plane);
    return { pools: views.map(({ pool, healthy, reason }) => ({ pool, healthy, reason })) };
  };
}

const poolRefreshHandler = once(async () => createPoolRefreshHandler(await controlPlaneFromEnv()));

export const handler = async (event: unknown): Promise<PoolRefreshReport> =>
  (await poolRefreshHandler())(event);
