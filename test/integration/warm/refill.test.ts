import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { refillWarmPools } from '../../../lib/warm/refill.ts';
import { warmStatusOf } from '../../../lib/warm/status.ts';
import { testPlane } from '../../helpers/plane.ts';

/** One refill pass after another on a control plane over the memory store, its clock moved by hand. */
async function planeWith(
  warm: Record<string, unknown>[],
  pool: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
) {
  let now = new Date('2026-12-07T10:00:00Z');
  const adapter = new FakeAdapter();
  const { plane } = await testPlane({
    now: () => now,
    pools: [{ spec: { name: 'warm', adapter: 'fake', warm, ...pool }, adapter }],
  });
  Object.assign(plane.config, config);
  const ready = async () =>
    (await plane.store.listWarm('warm')).filter((record) => record.status === 'ready');
  return {
    plane,
    adapter,
    ready,
    refill: () => refillWarmPools({ ...plane, now: () => now }),
    advance: (seconds: number) => {
      now = new Date(now.getTime() + seconds * 1000);
    },
    now: () => now,
    live: async () => (await adapter.list(await plane.store.installation())).length,
  };
}

describe('warm refill', () => {
  it('fills each target to its size, then does nothing more; a second pass while one runs does nothing', async () => {
    const t = await planeWith([{ size: 3 }, { size: 2, resources: { cpu: 2 } }]);
    const [first, concurrent] = await Promise.all([t.refill(), t.refill()]);
    const passes = [first, concurrent];
    expect(passes.filter((pass) => pass.ran)).toHaveLength(1);
    expect((await t.ready()).length).toBe(5);
    expect(await t.live()).toBe(5);
    const again = await t.refill();
    expect(again.targets.map((target) => [target.ready, target.created])).toEqual([
      [3, 0],
      [2, 0],
    ]);
    expect(await t.live()).toBe(5);
    // Each instance holds a slot of its pool.
    expect(await t.plane.store.getPoolUsage('warm')).toBe(5);
  });

  it("stays within the pool's maxConcurrency, the slots it shares with sandboxes", async () => {
    const t = await planeWith([{ size: 5 }], { maxConcurrency: 3 });
    const report = await t.refill();
    expect(report.targets[0]).toMatchObject({
      ready: 3,
      created: 3,
      held: expect.stringContaining('maxConcurrency of 3'),
    });
    expect(await t.live()).toBe(3);
  });

  it('stays within the installation’s cost cap at the pools’ running prices', async () => {
    // 1 vCPU and 1 GiB at 0.0001 + 0.0001 per second: 0.72 an hour each; a cap of 2 affords two.
    const t = await planeWith(
      [{ size: 5 }],
      { prices: { perCreate: 0.5, running: { perVcpuSecond: 0.0001, perGiBSecond: 0.0001 } } },
      { warm: { maxHourlyCost: 2 } },
    );
    const report = await t.refill();
    expect(report.targets[0]).toMatchObject({
      ready: 2,
      created: 2,
      held: expect.stringContaining('cost cap of 2'),
    });
    expect(report.hourlyCost).toBeCloseTo(1.44, 6);
    expect(await t.live()).toBe(2);
    // The installation's, shown apart: half an hour later, two creates and two half-hours.
    t.advance(1800);
    const pool = t.plane.pools.get('warm');
    if (pool === undefined) throw new Error('no pool');
    const [status] = await warmStatusOf(t.plane.store, pool, t.plane.config, t.now());
    expect(status).toMatchObject({ ready: 2, hourlyCost: 1.44 });
    expect(status?.costSoFar).toBeCloseTo(2 * 0.5 + 2 * 0.36, 6);
    // No org pays for them.
    expect(
      (await t.plane.store.getUsage((await t.plane.tenancy.listOrgs({ limit: 10 })).items[0]?.id ?? ''))
        .sandboxes,
    ).toBe(0);
  });

  it('retires instances past their maximum age, outside their windows, of a removed target, or beyond the size', async () => {
    const t = await planeWith([{ size: 2, maxAgeSeconds: 600, windows: [{ from: '09:00', to: '12:00' }] }]);
    await t.refill();
    const before = (await t.ready()).map((record) => record.id);
    expect(before).toHaveLength(2);
    // Older than their maximum age: replaced by new ones.
    t.advance(601);
    const aged = await t.refill();
    expect(aged.targets[0]).toMatchObject({ retired: 2, created: 2, ready: 2 });
    expect((await t.ready()).map((record) => record.id).some((id) => before.includes(id))).toBe(false);
    expect(await t.live()).toBe(2);
    // Outside its window (past 12:00): none kept, none made.
    t.advance(2 * 3600);
    const closed = await t.refill();
    expect(closed.targets[0]).toMatchObject({ size: 0, retired: 2, created: 0 });
    expect(await t.ready()).toEqual([]);
    expect(await t.live()).toBe(0);
    expect(await t.plane.store.getPoolUsage('warm')).toBe(0);
  });

  it('a Create that fails leaves no record and frees its slot; the next pass tries again', async () => {
    const t = await planeWith([{ size: 2 }]);
    t.adapter.inject('create', { error: new Error('backend down'), times: 2 });
    const failed = await t.refill();
    expect(failed.targets[0]).toMatchObject({ failed: 2, created: 0 });
    expect(await t.plane.store.listWarm('warm')).toEqual([]);
    expect(await t.plane.store.getPoolUsage('warm')).toBe(0);
    const next = await t.refill();
    expect(next.targets[0]).toMatchObject({ created: 2, ready: 2 });
  });
});
