import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { refreshPools } from '../lib/scheduler/pool-refresh.ts';
import type { PoolView } from '../lib/store/records.ts';
import { refillWarmPools, type WarmRefillReport } from '../lib/warm/refill.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { requireScheduleEvent } from './schedule-event.ts';

export interface PoolRefreshReport {
  pools: { pool: string; healthy: boolean; reason: string | null }[];
  /** The warm pools' refill after the probes (lib/warm/refill.ts). */
  warm: WarmRefillReport;
}

export function createPoolRefreshHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return async (event: unknown): Promise<PoolRefreshReport> => {
    requireScheduleEvent(event, 'pool-refresh');
    const views: PoolView[] = await refreshPools(plane);
    tools?.metrics.addMetric(
      'UnhealthyPools',
      MetricUnit.Count,
      views.filter((view) => !view.healthy).length,
    );
    // Refill on what the probes just saw; its Creates end before the function's own timeout.
    const warm = await refillWarmPools(plane, (plane.config.scheduler.provisionTimeoutSeconds + 30) * 1000);
    if (warm.ran) {
      const sum = (field: 'created' | 'failed' | 'retired' | 'ready') =>
        warm.targets.reduce((total, target) => total + target[field], 0);
      tools?.metrics.addMetric('WarmRefills', MetricUnit.Count, sum('created'));
      tools?.metrics.addMetric('WarmRefillFailures', MetricUnit.Count, sum('failed'));
      tools?.metrics.addMetric('WarmRetired', MetricUnit.Count, sum('retired'));
      tools?.metrics.addMetric('WarmReady', MetricUnit.Count, sum('ready'));
      tools?.metrics.addMetric('WarmHourlyCost', MetricUnit.NoUnit, warm.hourlyCost);
    }
    return { pools: views.map(({ pool, healthy, reason }) => ({ pool, healthy, reason })), warm };
  };
}

export const poolRefreshFunction: FunctionDefinition<unknown, PoolRefreshReport> = {
  name: 'poolRefresh',
  kind: 'scheduled',
  core: createPoolRefreshHandler,
};

export const handler = lambdaEntry(poolRefreshFunction);
