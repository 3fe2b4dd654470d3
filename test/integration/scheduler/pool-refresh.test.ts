import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { silentLog } from '../../../lib/log.ts';
import { refreshPools } from '../../../lib/scheduler/pool-refresh.ts';
import { provisionSandbox as provision } from '../../../lib/scheduler/provision.ts';
import { memoryStore } from '../../../lib/store/memory.ts';
import { RecordingQueue } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/** A backend whose health probe never answers and ignores its abort signal. */
class HangingHealth extends FakeAdapter {
  override health(): Promise<void> {
    return new Promise(() => undefined);
  }
}

async function plane(adapters: Record<string, FakeAdapter>) {
  const config = parseConfig({
    devMode: true,
    pools: Object.keys(adapters).map((name) => ({ name, adapter: 'fake' })),
  });
  const store = memoryStore();
  const pools = await buildPools(config, { log: silentLog, adapters, store });
  const control = createControlPlane({ config, store, queue: new RecordingQueue(), pools, log: silentLog });
  const org = await control.tenancy.createOrg({ name: 'refresh' });
  return { control, store, principal: orgPrincipal(org.id) };
}

describe('pool-refresh', () => {
  it("stores each pool's view; a hanging health probe does not hold up the others", async () => {
    const { control, store } = await plane({ good: new FakeAdapter(), stuck: new HangingHealth() });
    const views = await refreshPools(control, { timeoutMs: 100 });
    expect(views.map((v) => [v.pool, v.healthy])).toEqual([
      ['good', true],
      ['stuck', false],
    ]);
    expect(views[1]?.reason).toMatch(/health: timed out after 100 ms/);
    expect((await store.listPoolViews()).map((v) => v.pool).sort()).toEqual(['good', 'stuck']);
    const detail = await control.poolAdmin.get('stuck');
    expect(detail.health).toEqual({ healthy: false, reason: expect.stringMatching(/timed out/) });
    expect(detail.refreshedAt).not.toBeNull();
  });

  it('brings a pool marked down by a provider_unavailable back at its next successful probe, not 30 s later', async () => {
    const { control } = await plane({ good: new FakeAdapter() });
    await control.pools.markDown('good', 'connection refused');
    expect(control.pools.health('good')).toEqual({
      healthy: false,
      reason: expect.stringMatching(/^the backend was unavailable at .*: connection refused$/),
    });
    // A probe that starts after the mark (a second later on its own clock; no waiting on the real one).
    const later = Date.now() + 1000;
    await refreshPools({ ...control, now: () => new Date(later) });
    expect(control.pools.health('good')).toEqual({ healthy: true, reason: null });
  });

  it('keeps a pool that was healthy and then failed its probe unhealthy, everywhere, until a probe passes', async () => {
    const flaky = new FakeAdapter();
    const { control, store, principal } = await plane({ flaky, steady: new FakeAdapter() });
    const start = Date.now();
    const at = (seconds: number) => () => new Date(start + seconds * 1000);
    await refreshPools({ ...control, now: at(0) });
    expect(control.pools.health('flaky')).toEqual({ healthy: true, reason: null });
    flaky.inject('health', { error: new Error('the node is gone'), times: 2 });
    await refreshPools({ ...control, now: at(60) });
    // Another container, which only reads the store, sees it too.
    const other = await buildPools(control.config, {
      log: silentLog,
      adapters: { flaky, steady: new FakeAdapter() },
      store,
    });
    await other.sync(true);
    for (const registry of [control.pools, other])
      expect(registry.health('flaky')).toEqual({
        healthy: false,
        reason: expect.stringMatching(/the node is gone/),
      });
    // Time alone does not bring it back: an hour later, with no probe since, it is still unhealthy.
    expect(control.pools.health('flaky', start + 3_600_000).healthy).toBe(false);
    // Nor does a second failing probe; placement sends work elsewhere, saying why.
    await refreshPools({ ...control, now: at(120) });
    expect(control.pools.health('flaky').healthy).toBe(false);
    const { sandbox } = await control.sandboxes.create(principal, {});
    await provision(control, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    const placed = await store.getSandbox(principal.orgId, sandbox.id);
    expect(placed?.pool).toBe('steady');
    expect(placed?.placement.rejected).toContainEqual({
      pool: 'flaky',
      reason: expect.stringMatching(/unhealthy.*the node is gone/),
    });
    // The first probe that passes makes it healthy again, in every container.
    await refreshPools({ ...control, now: at(180) });
    await other.sync(true);
    for (const registry of [control.pools, other])
      expect(registry.health('flaky')).toEqual({ healthy: true, reason: null });
  });

  it('reports a stored pool of a kind this build lacks as unhealthy with that reason (E0.22)', async () => {
    const { control, store, principal } = await plane({ good: new FakeAdapter() });
    const now = new Date().toISOString();
    await store.putPool(
      {
        name: 'old',
        adapter: 'firecracker',
        trust: 'private',
        maxConcurrency: 0,
        config: {},
        createdAt: now,
        updatedAt: now,
      },
      'create',
      { actor: 'admin', action: 'pool.created', target: 'old', details: {} },
    );
    const views = await refreshPools(control);
    expect(views.find((v) => v.pool === 'old')).toMatchObject({
      healthy: false,
      reason: expect.stringMatching(/no adapter for kind firecracker in this build/),
    });
    // A sandbox pinned to it waits with the reason instead of failing or erroring.
    const { sandbox } = await control.sandboxes.create(principal, { placement: { allowedPools: ['old'] } });
    await provision(control, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    const record = await store.getSandbox(principal.orgId, sandbox.id);
    expect(record?.status).toBe('queued');
    expect(record?.statusMessage).toMatch(/old: unhealthy: no adapter for kind firecracker/);
  });

  it('feeds bounded capacity to placement: a full node sends work to the pool with room', async () => {
    const small = new FakeAdapter({ totalCPU: 1, totalMemoryMiB: 4096 });
    const { control, principal } = await plane({ small, roomy: new FakeAdapter() });
    const first = await control.sandboxes.create(principal, { placement: { allowedPools: ['small'] } });
    await provision(control, { sandboxId: first.sandbox.id, orgId: principal.orgId }, 1);
    await refreshPools(control);
    expect((await control.poolAdmin.get('small')).capacity).toMatchObject({
      bounded: true,
      largestFreeCPU: 0,
    });
    const second = await control.sandboxes.create(principal, {});
    await provision(control, { sandboxId: second.sandbox.id, orgId: principal.orgId }, 1);
    const placed = await control.store.getSandbox(principal.orgId, second.sandbox.id);
    expect(placed?.pool).toBe('roomy');
    expect(placed?.placement.rejected).toContainEqual({
      pool: 'small',
      reason: expect.stringMatching(/no node has room/),
    });
  });
});
