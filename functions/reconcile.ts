import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { z } from 'zod';
import type { ControlPlane } from '../lib/control-plane.ts';
import { type ReconcileReport, reconcile } from '../lib/scheduler/reconcile.ts';
import { controlPlaneFromEnv, once } from './wiring.ts';

/** What the EventBridge Scheduler schedule sends (its target input); anything else is refused. */
export const reconcileEventSchema = z.object({
  source: z.literal('differently.schedule'),
  task: z.literal('reconcile'),
});

/** The slice of Powertools' Metrics this function uses, so tests can record what it publishes. */
export interface MetricsSink {
  singleMetric(): Pick<Metrics, 'addDimension' | 'addMetric'>;
  addMetric(name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): void;
  publishStoredMetrics(): void;
}

const perPool = [
  ['OrphansDeleted', 'orphansDeleted'],
  ['DuplicatesDeleted', 'duplicatesDeleted'],
  ['Adopted', 'adopted'],
  ['Requeued', 'requeued'],
  ['Failed', 'failed'],
  ['Stopped', 'stopped'],
] as const;

/** One EMF record per pool with its counts (dimension `pool`), plus the pass duration. */
export function publishReconcileMetrics(metrics: MetricsSink, report: ReconcileReport): void {
  if (!report.ran) return;
  for (const pool of report.pools) {
    const single = metrics.singleMetric();
    single.addDimension('pool', pool.pool);
    for (const [name, field] of perPool) single.addMetric(name, MetricUnit.Count, pool[field]);
    single.addMetric('PoolSkipped', MetricUnit.Count, pool.skipped === undefined ? 0 : 1);
  }
  metrics.addMetric('ReconcileDuration', MetricUnit.Milliseconds, report.durationMs);
  metrics.publishStoredMetrics();
}

export function createReconcileHandler(plane: ControlPlane, metrics?: MetricsSink) {
  return async (event: unknown): Promise<ReconcileReport> => {
    if (!reconcileEventSchema.safeParse(event).success) {
      throw new Error('the reconciler expects {"source":"differently.schedule","task":"reconcile"}');
    }
    const report = await reconcile(plane);
    if (metrics !== undefined) publishReconcileMetrics(metrics, report);
    return report;
  };
}

const reconcileHandler = once(async () =>
  createReconcileHandler(
    await controlPlaneFromEnv(),
    new Metrics({ namespace: 'Differently', serviceName: 'reconcile' }),
  ),
);

export const handler = async (event: unknown): Promise<ReconcileReport> => (await reconcileHandler())(event);
