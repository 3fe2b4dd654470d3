import { describe, expect, inject, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { errors } from '../../../lib/errors.ts';
import { silentLog } from '../../../lib/log.ts';
import { transitionSandbox } from '../../../lib/sandboxes/transition.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { reconcile } from '../../../lib/scheduler/reconcile.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';
import { RecordingQueue } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';
import { storeFactories } from '../../helpers/stores.ts';

/** DynamoDB Local is the integration project's: under `npm run mutate` the memory variant runs alone. */
const withServices = inject('dynamodbEndpoint') !== undefined;

const stores: Record<string, () => Promise<Store>> = {
  memory: () => storeFactories.memory(),
  ...(withServices && { dynamodb: () => storeFactories.dynamodb() }),
};

/** Two pools, `first` and `second`; with `shared`, both on one backend (one fake, one installation). */
async function setup(kind: string, options: { shared?: boolean } = {}) {
  let clock = Date.parse('2026-12-01T00:00:00.000Z');
  const now = () => new Date(clock);
  const make = stores[kind];
  if (make === undefined) throw new Error(kind);
  const store = await make();
  const first = new FakeAdapter();
  const second = options.shared === true ? first : new FakeAdapter();
  const queue = new RecordingQueue();
  const config = parseConfig({
    devMode: true,
    pools: [
      { name: 'first', adapter: 'fake' },
      { name: 'second', adapter: 'fake' },
    ],
  });
  const plane = createControlPlane({
    config,
    store,
    queue,
    pools: await buildPools(config, { log: silentLog, adapters: { first, second } }),
    log: silentLog,
    adminKey: 'k',
    now,
  });
  const org = await plane.tenancy.createOrg({ name: 'reconcile' });
  const principal: Extract<Principal, { kind: 'org' }> = orgPrincipal(org.id);
  const installation = await store.installation();
  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };
  const running = async (pool: 'first' | 'second' = 'first') => {
    const { sandbox } = await plane.sandboxes.create(principal, { placement: { allowedPools: [pool] } });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: org.id });
    const record = await store.getSandbox(org.id, sandbox.id);
    if (record?.status !== 'running') throw new Error('not running');
    return record;
  };
  const reload = async (id: string) => {
    const record = await store.getSandbox(org.id, id);
    if (record === undefined) throw new Error('gone');
    return record;
  };
  const poolReport = async (pool: string) => {
    const report = await reconcile(plane);
    return report.pools.find((p) => p.pool === pool);
  };
  return {
    plane,
    store,
    first,
    second,
    queue,
    org,
    principal,
    installation,
    advance,
    now,
    running,
    reload,
    poolReport,
  };
}

describe.each(Object.keys(stores))('reconciler (%s store)', (kind) => {
  it('deletes orphans: an instance of an unknown sandbox, and one of a terminated sandbox', async () => {
    const { first, installation, principal, plane, org, running, advance, poolReport } = await setup(kind);
    const stray = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV', installation);
    const done = await running();
    await plane.sandboxes.delete(principal, done.id);
    // Terminated without its Delete reaching the backend (the record says terminated, the instance is there).
    await transitionSandbox(
      plane.store,
      await plane.store.getSandbox(org.id, done.id).then((r) => r ?? done),
      'terminated',
      {},
      {
        now: new Date(),
        actor: 'test',
      },
    );
    const other = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAW', 'inst_someone_else');
    advance(60);
    const report = await poolReport('first');
    expect(report?.orphansDeleted).toBe(2);
    await expect(first.get(stray.ref)).rejects.toMatchObject({ code: 'not_found' });
    await expect(first.get(done.backendRef ?? '')).rejects.toMatchObject({ code: 'not_found' });
    // Another installation's instance is not ours to judge.
    expect((await first.get(other.ref)).ref).toBe(other.ref);
  });

  it('leaves an instance its backend cannot name (a suspended MicroVM): known by its ref, never deleted on a guess', async () => {
    const { first, installation, running, reload, advance, poolReport } = await setup(kind);
    const held = await running();
    const stray = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAX', installation);
    const named = first.list.bind(first);
    first.list = async (of, opts) =>
      (await named(of, opts)).map((instance) => ({ ...instance, sandboxId: '' }));
    advance(60);
    const report = await poolReport('first');
    expect(report).toMatchObject({ listed: 2, orphansDeleted: 0, duplicatesDeleted: 0, failed: 0 });
    // The held sandbox's ref is listed, so it has not disappeared; the unheld instance is still there.
    expect((await reload(held.id)).status).toBe('running');
    expect((await first.get(stray.ref)).ref).toBe(stray.ref);
  });

  it('adopts the instance of a sandbox whose worker crashed after Create, without a second one', async () => {
    const { plane, store, first, org, principal, installation, advance, reload, poolReport } =
      await setup(kind);
    const { sandbox } = await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } });
    const queued = await reload(sandbox.id);
    await transitionSandbox(
      store,
      queued,
      'provisioning',
      { pool: 'first' },
      { now: new Date(Date.parse(queued.updatedAt)), actor: 'test' },
    );
    await first.create({ id: sandbox.id, installation, resources: queued.resources, env: {}, labels: {} });
    advance(121);
    const report = await poolReport('first');
    expect(report?.adopted).toBe(1);
    const adopted = await reload(sandbox.id);
    expect(adopted.status).toBe('running');
    expect(adopted.expiresAt).not.toBeNull();
    expect(first.instanceCount()).toBe(1);
    expect(org.id).toBe(adopted.orgId);
  });

  it('requeues a stale provisioning sandbox that has no instance', async () => {
    const { plane, store, queue, principal, advance, reload, poolReport } = await setup(kind);
    const { sandbox } = await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } });
    const queued = await reload(sandbox.id);
    await transitionSandbox(
      store,
      queued,
      'provisioning',
      { pool: 'first' },
      { now: new Date(Date.parse(queued.updatedAt)), actor: 'test' },
    );
    advance(60);
    expect((await poolReport('first'))?.requeued).toBe(0);
    advance(61);
    queue.sent.length = 0;
    expect((await poolReport('first'))?.requeued).toBe(1);
    expect((await reload(sandbox.id)).status).toBe('queued');
    expect(queue.sent.map((m) => m.message.sandboxId)).toEqual([sandbox.id]);
  });

  it('fails a sandbox whose instance disappeared, releasing its reservation; not within the grace period', async () => {
    const { first, store, org, running, advance, reload, poolReport } = await setup(kind);
    const sandbox = await running();
    first.vanish(sandbox.backendRef ?? '');
    advance(10);
    expect((await poolReport('first'))?.failed).toBe(0);
    expect((await reload(sandbox.id)).status).toBe('running');
    advance(30);
    expect((await poolReport('first'))?.failed).toBe(1);
    const failed = await reload(sandbox.id);
    expect(failed).toMatchObject({ status: 'failed', statusMessage: 'backend instance disappeared' });
    expect((await store.getUsage(org.id)).sandboxes).toBe(0);
  });

  it('follows the backend: stopped makes the sandbox stopped, error fails it', async () => {
    const { first, store, org, running, advance, reload, poolReport } = await setup(kind);
    const toStop = await running();
    const toFail = await running();
    first.setState(toStop.backendRef ?? '', 'stopped');
    first.setState(toFail.backendRef ?? '', 'error', 'kernel panic');
    advance(60);
    const report = await poolReport('first');
    expect(report).toMatchObject({ stopped: 1, failed: 1 });
    expect((await reload(toStop.id)).status).toBe('stopped');
    expect((await reload(toFail.id)).statusMessage).toContain('kernel panic');
    expect((await store.getUsage(org.id)).cpu).toBe(0);
  });

  it('changes nothing on a pool whose List failed', async () => {
    const { first, running, advance, reload, poolReport, installation } = await setup(kind);
    const sandbox = await running();
    first.vanish(sandbox.backendRef ?? '');
    const stray = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV', installation);
    first.inject('list', { error: errors.providerUnavailable('page 3 of 5 timed out') });
    advance(60);
    const report = await poolReport('first');
    expect(report?.skipped).toContain('page 3 of 5 timed out');
    expect((await reload(sandbox.id)).status).toBe('running');
    expect((await first.get(stray.ref)).ref).toBe(stray.ref);
  });

  it('deletes a second instance of one sandbox on a pool, keeping its backendRef (E0.21)', async () => {
    const { first, running, advance, reload, poolReport, installation } = await setup(kind);
    const sandbox = await running();
    const duplicate = first.plant(sandbox.id, installation);
    advance(60);
    expect((await poolReport('first'))?.duplicatesDeleted).toBe(1);
    await expect(first.get(duplicate.ref)).rejects.toMatchObject({ code: 'not_found' });
    expect((await first.get(sandbox.backendRef ?? '')).ref).toBe(sandbox.backendRef);
    expect((await reload(sandbox.id)).status).toBe('running');
  });

  it('two pools on one backend leave each other’s current instances alone and delete only leftovers', async () => {
    const { first, running, advance, reload, poolReport, installation } = await setup(kind, { shared: true });
    const onSecond = await running('second');
    // An instance left on the shared backend by an earlier placement of the same sandbox.
    const leftover = first.plant(onSecond.id, installation);
    advance(60);
    const report = await poolReport('first');
    expect(report?.orphansDeleted).toBe(1);
    await expect(first.get(leftover.ref)).rejects.toMatchObject({ code: 'not_found' });
    expect((await first.get(onSecond.backendRef ?? '')).ref).toBe(onSecond.backendRef);
    expect((await reload(onSecond.id)).status).toBe('running');
  });

  it('finishes in the next pass what a failure interrupted in this one', async () => {
    const { first, installation, advance, poolReport } = await setup(kind);
    const a = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV', installation);
    const b = first.plant('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAW', installation);
    first.inject('delete', { error: errors.providerUnavailable('connection reset') });
    advance(60);
    expect((await poolReport('first'))?.orphansDeleted).toBe(1);
    expect((await poolReport('first'))?.orphansDeleted).toBe(1);
    await expect(first.get(a.ref)).rejects.toMatchObject({ code: 'not_found' });
    await expect(first.get(b.ref)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('does nothing while another pass holds the lease, and proceeds once it expired', async () => {
    const { plane, store, now, advance } = await setup(kind);
    const until = new Date(now().getTime() + 300_000).toISOString();
    expect(await store.acquireLease('reconcile', 'a-pass-that-died', until, now().toISOString())).toBe(true);
    expect(await reconcile(plane)).toMatchObject({ ran: false, pools: [] });
    advance(301);
    const report = await reconcile(plane);
    expect(report.ran).toBe(true);
    expect(report.pools.map((p) => p.pool)).toEqual(['first', 'second']);
  });
});
