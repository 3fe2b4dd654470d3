import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ControlPlaneDeps } from '../lib/control-plane.ts';
import { type SweepReport, sweep } from '../lib/scheduler/sweep.ts';
import { type FunctionDefinition, lambdaEntry } from './entry.ts';
import type { Observability } from './observability.ts';
import { requireScheduleEvent } from './schedule-event.ts';

/** The sweep's counts, as metrics (flushed with the invocation). */
const sweepMetrics = {
  expired: 'SweepExpired',
  requeuedProvisions: 'SweepRequeuedProvisions',
  requeuedTerminations: 'SweepRequeuedTerminations',
  requeuedOperations: 'SweepRequeuedOperations',
  deadLetteredProvisions: 'SweepDeadLetteredProvisions',
  deadLetteredTerminations: 'SweepDeadLetteredTerminations',
  deadLetteredOperations: 'SweepDeadLetteredOperations',
  skipped: 'SweepSkipped',
} as const satisfies Record<keyof SweepReport, string>;

export function createSweepHandler(plane: ControlPlaneDeps, tools?: Pick<Observability, 'metrics'>) {
  return async (event: unknown): Promise<SweepReport> => {
    requireScheduleEvent(event, 'sweep');
    const report = await sweep(plane);
    for (const [field, name] of Object.entries(sweepMetrics))
      tools?.metrics.addMetric(name, MetricUnit.Count, report[field as keyof SweepReport]);
    return report;
  };
}

export const sweepFunction: FunctionDefinition<unknown, SweepReport> = {
  name: 'sweep',
  kind: 'scheduled',
  core: createSweepHandler,
};

export const handler = lambdaEntry(sweepFunction);
