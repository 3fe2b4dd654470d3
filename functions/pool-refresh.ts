import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { refreshPools } from '../lib/scheduler/pool-refresh.ts';
import type { PoolView } from '../lib/store/records.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { requireScheduleEvent } from './schedule-event.ts';

export interface PoolRefreshReport {
  pools: { pool: string; healthy: boolean; reason: string | null }[];
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
    return { pools: views.map(({ pool, healthy, reason }) => ({ pool, healthy, reason })) };
  };
}

export const poolRefreshFunction: FunctionDefinition<unknown, PoolRefreshReport> = {
  name: 'poolRefresh',
  kind: 'scheduled',
  core: createPoolRefreshHandler,
};

export const handler = lambdaEntry(poolRefreshFunction);
