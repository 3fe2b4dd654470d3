import { describe, expect, it } from 'vitest';
import { type MetricsSink, publishReconcileMetrics } from '../../functions/reconcile.ts';

function recorder() {
  const records: { dimensions: Record<string, string>; metrics: Record<string, number> }[] = [];
  const top: Record<string, number> = {};
  let published = 0;
  const sink: MetricsSink = {
    singleMetric() {
      const record = { dimensions: {} as Record<string, string>, metrics: {} as Record<string, number> };
      records.push(record);
      const single = {
        addDimension(name: string, value: string) {
          record.dimensions[name] = value;
          return single;
        },
        addMetric(name: string, _unit: unknown, value: number) {
          record.metrics[name] = value;
          return single;
        },
      };
      return single as unknown as ReturnType<MetricsSink['singleMetric']>;
    },
    addMetric(name, _unit, value) {
      top[name] = value;
    },
    publishStoredMetrics() {
      published++;
    },
  };
  return { sink, records, top, published: () => published };
}

describe('reconcile metrics', () => {
  it('publishes each pool’s counts under a pool dimension, and the pass duration', () => {
    const { sink, records, top, published } = recorder();
    publishReconcileMetrics(sink, {
      ran: true,
      durationMs: 42,
      pools: [
        {
          pool: 'a',
          listed: 3,
          orphansDeleted: 1,
          duplicatesDeleted: 0,
          adopted: 2,
          requeued: 0,
          failed: 1,
          stopped: 0,
          inGrace: 0,
        },
        {
          pool: 'b',
          skipped: 'List failed',
          listed: 0,
          orphansDeleted: 0,
          duplicatesDeleted: 0,
          adopted: 0,
          requeued: 0,
          failed: 0,
          stopped: 0,
          inGrace: 0,
        },
      ],
    });
    expect(records).toEqual([
      {
        dimensions: { pool: 'a' },
        metrics: {
          OrphansDeleted: 1,
          DuplicatesDeleted: 0,
          Adopted: 2,
          Requeued: 0,
          Failed: 1,
          Stopped: 0,
          PoolSkipped: 0,
        },
      },
      {
        dimensions: { pool: 'b' },
        metrics: {
          OrphansDeleted: 0,
          DuplicatesDeleted: 0,
          Adopted: 0,
          Requeued: 0,
          Failed: 0,
          Stopped: 0,
          PoolSkipped: 1,
        },
      },
    ]);
    expect(top).toEqual({ ReconcileDuration: 42 });
    expect(published()).toBe(1);
  });

  it('publishes nothing for a pass that did not run (lease held elsewhere)', () => {
    const { sink, records, published } = recorder();
    publishReconcileMetrics(sink, { ran: false, pools: [], durationMs: 1 });
    expect(records).toEqual([]);
    expect(published()).toBe(0);
  });
});
