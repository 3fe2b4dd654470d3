import { describe, expect, it } from 'vitest';
import { installationChain } from '../../../lib/store/audit/port.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { admin, codeOf, type StoreUnderTest } from './store-under-test.ts';

/** The pools aggregate's part of the store conformance suite (lib/store/pools/). */
export function poolsConformance(subject: StoreUnderTest): void {
  describe('pools, views and the policy', () => {
    it('stores runtime pools (create conflicts on a taken name), their views, and the policy', async () => {
      const store = await subject.create();
      const now = new Date().toISOString();
      const pool = {
        name: 'lab',
        adapter: 'firecracker',
        trust: 'private' as const,
        maxConcurrency: 3,
        config: { endpoint: 'https://lab' },
        createdAt: now,
        updatedAt: now,
      };
      await store.putPool(pool, 'create', admin);
      expect(await codeOf(store.putPool(pool, 'create', admin))).toBe('conflict');
      expect(await codeOf(store.putPool({ ...pool, name: 'nope' }, 'replace', admin))).toBe('not_found');
      await store.putPool({ ...pool, maxConcurrency: 5 }, 'replace', admin);
      expect(await store.getPool('lab')).toEqual({ ...pool, maxConcurrency: 5 });
      expect((await store.listPools()).map((p) => p.name)).toEqual(['lab']);
      const view = {
        pool: 'lab',
        healthy: false,
        reason: 'no adapter for kind firecracker in this build',
        capabilities: null,
        capacity: null,
        refreshedAt: now,
        downSince: null,
        downReason: null,
      };
      await store.putPoolView(view);
      await store.putPoolView({ ...view, refreshedAt: 'later' });
      expect(await store.listPoolViews()).toEqual([{ ...view, refreshedAt: 'later' }]);
      // A down mark is shared, moves only forward, survives a probe's write, and needs no view.
      await store.markPoolDown('lab', '2026-01-01T00:00:02.000Z', 'connection refused');
      await store.markPoolDown('lab', '2026-01-01T00:00:01.000Z', 'older');
      await store.putPoolView({ ...view, refreshedAt: 'latest' });
      expect(await store.listPoolViews()).toEqual([
        {
          ...view,
          refreshedAt: 'latest',
          downSince: '2026-01-01T00:00:02.000Z',
          downReason: 'connection refused',
        },
      ]);
      await store.markPoolDown('lab-2', '2026-01-01T00:00:03.000Z', 'down');
      expect((await store.listPoolViews()).find((v) => v.pool === 'lab-2')).toMatchObject({
        downSince: '2026-01-01T00:00:03.000Z',
        capabilities: null,
      });
      expect(await store.getPolicy()).toBeUndefined();
      await store.putPolicy({ allowExternal: true, externalPools: ['lab'] }, admin);
      expect(await store.getPolicy()).toEqual({ allowExternal: true, externalPools: ['lab'] });
      await store.deletePool('lab', admin);
      expect(await store.getPool('lab')).toBeUndefined();
      expect((await store.listPoolViews()).map((view) => view.pool)).toEqual(['lab-2']);
      expect(await codeOf(store.deletePool('lab', admin))).toBe('not_found');
      // Every change was recorded in the installation's own chain.
      await store.linkAudit(installationChain);
      const chain = await verifyOrgChain(store, installationChain);
      expect(chain).toMatchObject({ ok: true, checked: 4 });
    });
  });
}
