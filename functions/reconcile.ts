import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { type ReconcileReport, reconcile } from '../lib/scheduler/reconcile.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { requireScheduleEvent } from './schedule-event.ts';

const perPool = [
  ['OrphansDeleted', 'orphansDeleted'],
  ['DuplicatesDeleted', 'duplicatesDeleted'],
  ['Adopted', 'adopted'],
  ['Requeued', 'requeued'],
  ['Failed', 'failed'],
  ['Stopped', 'stopped'],
] as const;

/**
 * One EMF record per pool with all its counts under the dimension `pool`, then the pass duration without
 * it. Each pool's record is published on its own: Powertools clears the dimensions at each publish, so
 * the next pool's counts never carry the previous pool's name (nor lose it, as a single metric would
 * after its first value).
 */
export function publishReconcileMetrics(metrics: Metrics, report: ReconcileReport): void {
  for (const pool of report.ran ? report.pools : []) {
    metrics.addDimension('pool', pool.pool);
    for (const [name, field] of perPool) metrics.addMetric(name, MetricUnit.Count, pool[field]);
    metrics.addMetric('PoolSkipped', MetricUnit.Count, pool.skipped === undefined ? 0 : 1);
    metrics.publishStoredMetrics();
  }
  // Published by the logMetrics middleware with the invocation's other metrics. ReconcileRan is 0 when
  // another container held the lease: the pass did nothing.
  metrics.addMetric('ReconcileRan', MetricUnit.Count, report.ran ? 1 : 0);
  if (report.ran) metrics.addMetric('ReconcileDuration', MetricUnit.Milliseconds, report.durationMs);
}

export function createReconcileHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return async (event: unknown): Promise<ReconcileReport> => {
    requireScheduleEvent(event, 'reconcile');
    const report = await reconcile(plane);
    if (tools !== undefined) publishReconcileMetrics(tools.metrics, report);
    return report;
  };
}

export const reconcileFunction: FunctionDefinition<unknown, ReconcileReport> = {
  name: 'reconcile',
  kind: 'scheduled',
  core: createReconcileHandler,
};

export const handler = lambdaEntry(reconcileFunction);
