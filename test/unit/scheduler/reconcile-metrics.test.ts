import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handlerFor } from '../../../functions/entry.ts';
import { observabilityFor } from '../../../functions/observability.ts';
import { publishReconcileMetrics, reconcileFunction } from '../../../functions/reconcile.ts';
import type { PoolReconcileReport } from '../../../lib/scheduler/reconcile.ts';
import { testPlane } from '../../helpers/plane.ts';
import { capturePowertoolsOutput } from '../../helpers/powertools-output.ts';

/** The EMF records the real Powertools Metrics writes to stdout (what CloudWatch turns into metrics). */
function captureEmf() {
  const stdout = capturePowertoolsOutput();
  return {
    records(): { dimensions: string[][]; values: Record<string, unknown> }[] {
      return stdout
        .lines()
        .filter((line) => '_aws' in line)
        .map((line) => {
          const record = line as Record<string, unknown> & {
            _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
          };
          const directive = record._aws.CloudWatchMetrics[0];
          const values: Record<string, unknown> = {};
          for (const dimension of directive?.Dimensions.flat() ?? []) values[dimension] = record[dimension];
          for (const metric of directive?.Metrics ?? []) values[metric.Name] = record[metric.Name];
          return { dimensions: directive?.Dimensions ?? [], values };
        });
    },
  };
}

function metricsOn(): Metrics {
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  vi.stubEnv('POWERTOOLS_DEV', '');
  // What Lambda sets in an on-demand container: Powertools counts a cold start only then.
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
  return new Metrics({ namespace: 'Differently', serviceName: 'reconcile' });
}

const pool = (name: string, counts: Partial<PoolReconcileReport>): PoolReconcileReport => ({
  pool: name,
  listed: 0,
  orphansDeleted: 0,
  duplicatesDeleted: 0,
  adopted: 0,
  requeued: 0,
  failed: 0,
  stopped: 0,
  inGrace: 0,
  warm: 0,
  warmLost: 0,
  ...counts,
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

describe('reconcile metrics, as the real Powertools library writes them', () => {
  it('writes one record per pool, every count in it under that pool’s dimension', () => {
    const metrics = metricsOn();
    const emf = captureEmf();
    publishReconcileMetrics(metrics, {
      ran: true,
      durationMs: 42,
      pools: [
        pool('a', { listed: 3, orphansDeleted: 1, adopted: 2, failed: 1 }),
        pool('b', { skipped: 'List failed' }),
      ],
    });
    metrics.publishStoredMetrics();
    const records = emf.records();
    expect(records).toHaveLength(3);
    const [first, second, last] = records;
    expect(first?.dimensions).toEqual([['service', 'pool']]);
    expect(first?.values).toEqual({
      service: 'reconcile',
      pool: 'a',
      OrphansDeleted: 1,
      DuplicatesDeleted: 0,
      Adopted: 2,
      Requeued: 0,
      Failed: 1,
      Stopped: 0,
      PoolSkipped: 0,
    });
    expect(second?.values).toMatchObject({ pool: 'b', PoolSkipped: 1, OrphansDeleted: 0, Stopped: 0 });
    // The pass's own figures carry no pool.
    expect(last?.dimensions).toEqual([['service']]);
    expect(last?.values).toEqual({ service: 'reconcile', ReconcileRan: 1, ReconcileDuration: 42 });
  });

  it('writes only ReconcileRan 0 for a pass that did not run (lease held elsewhere)', () => {
    const metrics = metricsOn();
    const emf = captureEmf();
    publishReconcileMetrics(metrics, { ran: false, pools: [pool('a', {})], durationMs: 1 });
    metrics.publishStoredMetrics();
    expect(emf.records().map((r) => r.values)).toEqual([{ service: 'reconcile', ReconcileRan: 0 }]);
  });

  it('flushes through the middy stack: a ColdStart metric on the first invocation, the pass figures after it', async () => {
    const { plane } = await testPlane();
    const tools = { ...observabilityFor('reconcile'), metrics: metricsOn() };
    const handler = handlerFor(reconcileFunction, plane, tools);
    const context = {
      functionName: 'differently-reconcile',
      awsRequestId: 'req-1',
      getRemainingTimeInMillis: () => 60_000,
    } as Context;
    const emf = captureEmf();
    await handler({ source: 'differently.schedule', task: 'reconcile' }, context);
    await handler({ source: 'differently.schedule', task: 'reconcile' }, context);
    const values = emf.records().map((r) => r.values);
    expect(values.filter((v) => 'ColdStart' in v)).toEqual([
      { service: 'reconcile', function_name: 'differently-reconcile', ColdStart: 1 },
    ]);
    const passes = values.filter((v) => 'ReconcileRan' in v);
    expect(passes).toHaveLength(2);
    for (const pass of passes)
      expect(pass).toMatchObject({ ReconcileRan: 1, ReconcileDuration: expect.any(Number) });
  });
});
