import { describe, expect, it } from 'vitest';
import { poolStatesNow } from '../../../lib/placement/rank.ts';
import { trustReport } from '../../../lib/placement/trust.ts';
import { testPlane } from '../../helpers/plane.ts';

describe('which features a pool offers has one answer', () => {
  it('placement, the admin view and the trust report all give the last probe’s features over the cold start’s', async () => {
    const { plane } = await testPlane();
    const built = plane.pools.featuresOf('first');
    // A probe found the backend now offers one feature more than this container read at its cold start.
    const probed = [...built, 'snapshots.memory'];
    await plane.store.putPoolView({
      pool: 'first',
      healthy: true,
      reason: null,
      capabilities: {
        features: probed,
        maxCPU: 8,
        maxMemoryMiB: 16384,
        maxDiskGiB: 100,
        templates: [],
        regions: [],
      },
      capacity: null,
      refreshedAt: new Date().toISOString(),
      downSince: null,
      downReason: null,
    });
    await plane.pools.sync(true);
    expect(plane.pools.featuresOf('first')).toEqual(probed);
    expect(poolStatesNow(plane.pools).find((state) => state.config.name === 'first')?.features).toEqual(
      probed,
    );
    expect((await plane.poolAdmin.get('first')).features).toEqual(probed);
    const report = await trustReport(plane.pools, plane.config, plane.store);
    expect(report.pools.find((pool) => pool.name === 'first')?.features).toEqual(probed);
    // A pool no probe has seen yet answers with what its container built.
    expect(plane.pools.featuresOf('second')).toEqual(built);
  });
});
