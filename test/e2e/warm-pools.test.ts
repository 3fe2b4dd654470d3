import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { poolSchema } from '../../lib/pools/admin-schemas.ts';
import { reconcileReportSchema } from '../../lib/schemas/admin.ts';
import { execResultSchema, sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { refillWarmPools } from '../../lib/warm/refill.ts';
import { orgKey, pointE2bAt } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { waitFor } from '../helpers/http-client.ts';

/**
 * Warm pools over HTTP on the local runtime (two containers per function), on both stores: the pool
 * `warm` keeps one instance of the default shape ready. Its fake backend answers each exec with the
 * environment the command got, so a test can see whose env reached which instance.
 */
describe.each(['memory', 'dynamodb'] as const)('warm pools (%s store)', (store) => {
  let e: E2e;
  let otherKey: string;
  const backend = new FakeAdapter({
    exec: (request) => ({
      exitCode: 0,
      stdout: JSON.stringify(request.env ?? {}),
      stderr: '',
      durationMs: 0,
      truncated: false,
      timedOut: false,
    }),
  });
  const onWarm = { placement: { allowedPools: ['warm'] } };

  beforeAll(async () => {
    e = await startE2e({
      fakes: { warm: { adapter: backend, pool: { warm: [{ size: 1, maxAgeSeconds: 600 }] } } },
      config: { scheduler: { reconcileGraceSeconds: 1 }, e2b: { allowedPools: ['warm'] } },
      ...(store === 'dynamodb' && { dynamodbEndpoint: inject('dynamodbEndpoint') }),
    });
    const org = z
      .object({ id: z.string() })
      .parse((await e.api.post('/v1/admin/orgs', e.runtime.adminKey, { name: 'other' })).body);
    otherKey = z
      .object({ key: z.string() })
      .parse((await e.api.post(`/v1/admin/orgs/${org.id}/keys`, e.runtime.adminKey, { name: 'o' })).body).key;
  });

  afterAll(async () => {
    await e?.stop();
  });

  const refill = () => refillWarmPools(e.runtime.plane);
  const ready = async () =>
    (await e.runtime.plane.store.listWarm('warm')).filter((w) => w.status === 'ready');
  const create = async (key: string, body: Record<string, unknown> = {}) => {
    const reply = await e.api.post('/v1/sandboxes', key, { ...onWarm, ...body });
    expect(reply.status).toBe(202);
    return sandboxSchema.parse(reply.body);
  };
  const envSeen = async (id: string, key: string) => {
    const reply = await e.api.post(`/v1/sandboxes/${id}/exec`, key, { command: 'env' });
    expect(reply.status).toBe(200);
    return z.record(z.string(), z.string()).parse(JSON.parse(execResultSchema.parse(reply.body).stdout));
  };

  it('keeps the target, shows it, and answers a matching create running from it with the tenant’s env alone', async () => {
    const report = await refill();
    expect(report.targets).toEqual([
      expect.objectContaining({ pool: 'warm', size: 1, ready: 1, created: 1, failed: 0 }),
    ]);
    const [instance] = await ready();
    expect(instance).toBeDefined();
    // Made for no tenant: no env, and labels that name the installation's warm pool, not an org.
    const made = backend.createRequests.find((request) => request.id === instance?.id);
    expect(made?.env).toEqual({});
    expect(Object.keys(made?.labels ?? {})).not.toContain('differently.dev/org');
    const detail = poolSchema.parse((await e.api.get('/v1/admin/pools/warm', e.runtime.adminKey)).body);
    expect(detail.warm).toEqual([
      expect.objectContaining({ size: 1, sizeNow: 1, ready: 1, provisioning: 0 }),
    ]);
    const trust = z
      .object({ pools: z.array(z.object({ name: z.string(), warm: z.array(z.unknown()) })) })
      .parse((await e.api.get('/v1/trust', e.key)).body);
    expect(trust.pools.find((pool) => pool.name === 'warm')?.warm).toEqual([
      expect.objectContaining({ template: null, size: 1, ready: 1 }),
    ]);

    // The create's own answer is already running, on the instance made ahead of it.
    const first = await create(e.key, { env: { SECRET: 'alpha' }, labels: { team: 'a' } });
    expect(first).toMatchObject({ id: instance?.id, status: 'running', pool: 'warm', labels: { team: 'a' } });
    expect(first.warm).toEqual({ claimedAt: expect.any(String), readyAt: instance?.readyAt });
    expect(await ready()).toEqual([]);
    expect(await envSeen(first.id, e.key)).toEqual({ SECRET: 'alpha' });
    // Its one lifecycle event says it runs: subscribers waiting for running are not left waiting.
    const published = await waitFor(
      async () => e.runtime.events.filter((event) => event.detail.sandboxId === first.id),
      (events) => events.length > 0,
      'the warm sandbox’s lifecycle event',
    );
    expect(published[0]).toMatchObject({
      detailType: 'differently.sandbox.running',
      detail: { pool: 'warm' },
    });
    const created = (await e.api.get('/v1/audit?limit=50', e.key)).body as {
      items: { action: string; target: string; details: Record<string, unknown> }[];
    };
    expect(
      created.items.find((event) => event.target === first.id && event.action === 'sandbox.created')?.details,
    ).toMatchObject({
      warm: { pool: 'warm' },
    });

    // The next instance is another one, and the next tenant's command never sees the first one's env.
    await refill();
    const [next] = await ready();
    expect(next?.id).not.toBe(first.id);
    const second = await create(otherKey);
    expect(second).toMatchObject({ id: next?.id, status: 'running' });
    expect(await envSeen(second.id, otherKey)).toEqual({});
    // Another org's key cannot see the first sandbox, warm or not.
    expect((await e.api.get(`/v1/sandboxes/${first.id}`, otherKey)).status).toBe(404);

    // Deleted, the instance is gone from the backend: never handed back to the pool.
    await e.destroy(first.id);
    await expect(backend.get(instance?.backendRef ?? instance?.id ?? '')).rejects.toThrow();
    expect((await e.runtime.plane.store.listWarm('warm')).map((w) => w.id)).not.toContain(first.id);
    await e.api.delete(`/v1/sandboxes/${second.id}`, otherKey);
    await e.until(second.id, 'terminated', otherKey);
  });

  it('concurrent creates against a pool of one: exactly one claims it, the rest take the normal path', async () => {
    await refill();
    const [instance] = await ready();
    const all = await Promise.all(
      Array.from({ length: 6 }, (_, index) => create(e.key, { env: { N: `${index}` } })),
    );
    const warm = all.filter((sandbox) => sandbox.warm !== null);
    expect(warm).toHaveLength(1);
    expect(warm[0]).toMatchObject({ id: instance?.id, status: 'running' });
    expect(all.filter((sandbox) => sandbox.warm === null).map((sandbox) => sandbox.status)).toEqual(
      Array(5).fill('queued'),
    );
    expect(new Set(all.map((sandbox) => sandbox.id)).size).toBe(6);
    // The others were built for their creates and run too; only the claimed one is on the warm instance.
    const running = await Promise.all(all.map((sandbox) => e.until(sandbox.id, 'running')));
    expect(running.every((sandbox) => sandbox.status === 'running')).toBe(true);
    const refs = await Promise.all(
      all.map(
        async (sandbox) => (await e.runtime.plane.store.getSandbox(sandbox.orgId, sandbox.id))?.backendRef,
      ),
    );
    expect(refs.filter((ref) => ref === instance?.backendRef)).toHaveLength(1);
    for (const sandbox of all) await e.destroy(sandbox.id);
  });

  it('falls back to the normal path when the pool is empty, the instance died, or no target matches', async () => {
    // Empty: nothing ready (the last test claimed it), so the create is queued and built for it.
    expect(await ready()).toEqual([]);
    const queued = await create(e.key);
    expect(queued).toMatchObject({ status: 'queued', warm: null });
    expect((await e.until(queued.id, 'running')).status).toBe('running');
    await e.destroy(queued.id);

    // Died: the backend lost the instance; the create is not handed it, and its record is retired.
    await refill();
    const [dead] = await ready();
    await backend.delete(dead?.backendRef ?? '');
    const afterDeath = await create(e.key);
    expect(afterDeath).toMatchObject({ status: 'queued', warm: null });
    expect((await e.runtime.plane.store.listWarm('warm')).map((w) => w.id)).not.toContain(dead?.id);
    expect((await e.until(afterDeath.id, 'running')).status).toBe('running');
    await e.destroy(afterDeath.id);

    // Another shape (more CPUs than the target's) is never answered from it.
    await refill();
    expect(await ready()).toHaveLength(1);
    const bigger = await create(e.key, { resources: { cpu: 2 } });
    expect(bigger).toMatchObject({ status: 'queued', warm: null });
    expect(await ready()).toHaveLength(1);
    await e.until(bigger.id, 'running');
    await e.destroy(bigger.id);
  });

  it('the reconciler leaves warm instances alone, and forgets a ready one whose instance is gone', async () => {
    await refill();
    const [instance] = await ready();
    const reconcile = async () =>
      reconcileReportSchema
        .parse((await e.api.post('/v1/admin/reconcile', e.runtime.adminKey)).body)
        .pools.find((pool) => pool.pool === 'warm');
    expect(await reconcile()).toMatchObject({ warm: 1, orphansDeleted: 0, warmLost: 0 });
    expect(await backend.get(instance?.backendRef ?? '')).toMatchObject({ state: 'running' });
    await backend.delete(instance?.backendRef ?? '');
    // Once the record is older than the grace period, the pass that lists no instance for it forgets it.
    await waitFor(reconcile, (report) => report?.warmLost === 1, 'the lost warm instance forgotten');
    expect(await ready()).toEqual([]);
    const report = await refill();
    expect(report.targets[0]).toMatchObject({ created: 1, ready: 1 });
  });

  it('answers E2B’s Sandbox.create from the warm pool too', async () => {
    await refill();
    const [instance] = await ready();
    pointE2bAt(e.runtime.url);
    const { e2bApiKey: apiKey, key } = await orgKey(e.runtime, `e2b-warm-${store}`);
    const sandbox = await Sandbox.create({ apiKey, envs: { FROM: 'e2b' } });
    expect(sandbox.sandboxId).toBe(instance?.id);
    const seen = sandboxSchema.parse((await e.api.get(`/v1/sandboxes/${sandbox.sandboxId}`, key)).body);
    expect(seen).toMatchObject({
      status: 'running',
      warm: { readyAt: instance?.readyAt },
      envKeys: ['FROM'],
    });
    expect(await envSeen(sandbox.sandboxId, key)).toEqual({ FROM: 'e2b' });
    await sandbox.kill();
  });

  it('takes warm targets through the admin API: a runtime pool with them, a change, a bad one named', async () => {
    const admin = e.runtime.adminKey;
    const name = `rt-${store}`;
    const made = await e.api.post('/v1/admin/pools', admin, {
      name,
      adapter: 'fake',
      warm: [{ size: 2, template: 'anything', maxAgeSeconds: 120 }],
    });
    expect(made.status).toBe(201);
    expect(poolSchema.parse(made.body).warm).toEqual([
      expect.objectContaining({ template: 'anything', size: 2, sizeNow: 2, maxAgeSeconds: 120, ready: 0 }),
    ]);
    const changed = await e.api.patch(`/v1/admin/pools/${name}`, admin, {
      warm: [{ size: 1, windows: [{ from: '00:00', to: '00:00' }] }],
    });
    expect(changed.status).toBe(200);
    expect(poolSchema.parse(changed.body).warm).toEqual([
      expect.objectContaining({ template: null, size: 1 }),
    ]);
    const bad = await e.api.patch(`/v1/admin/pools/${name}`, admin, {
      warm: [{ size: 1, windows: [{ from: '25:00', to: '01:00' }] }],
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('warm');
    const cleared = await e.api.patch(`/v1/admin/pools/${name}`, admin, { warm: null });
    expect(poolSchema.parse(cleared.body).warm).toEqual([]);
    await e.api.patch(`/v1/admin/pools/${name}`, admin, { warm: [{ size: 1 }] });
    await refill();
    expect(await e.runtime.plane.store.listWarm(name)).toHaveLength(1);
    // Deleting the pool retires its warm instances with it: no record, no slot left behind.
    expect((await e.api.delete(`/v1/admin/pools/${name}`, admin)).status).toBe(200);
    expect(await e.runtime.plane.store.listWarm(name)).toEqual([]);
    expect(await e.runtime.plane.store.getPoolUsage(name)).toBe(0);
  });
});
