/**
 * The reconciler's contract (adapter specification section 6), case by case, on the memory store with a
 * fixed clock: what one pass reports for a pool and what it leaves on the records and the backend.
 * Mutation testing (npm run mutate) pointed at the cases no suite pinned down.
 */
import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { errors } from '../../../lib/errors.ts';
import { type PoolReconcileReport, reconcile } from '../../../lib/scheduler/reconcile.ts';
import type { SandboxStatus } from '../../../lib/schemas/sandbox-status.ts';
import type { SandboxRecord } from '../../../lib/store/records.ts';
import type { SandboxPatch } from '../../../lib/store/sandboxes/port.ts';
import { testPlane } from '../../helpers/plane.ts';

const start = Date.parse('2026-12-03T12:00:00.000Z');
/** Older than the provision timeout (120 s) and the grace period (30 s) at the pass. */
const longAgo = new Date(start - 10 * 60_000).toISOString();
/** Within the grace period. */
const justNow = new Date(start - 5_000).toISOString();
/** Past the grace period, not yet past the provision timeout. */
const aMinuteAgo = new Date(start - 60_000).toISOString();

async function setup() {
  const base = await testPlane({ now: () => new Date(start) });
  const { plane, principal, adapters } = base;
  const installation = await plane.store.installation();
  /** A sandbox put straight into `status` on pool `first` (unless `fields` say otherwise). */
  const sandbox = async (status: SandboxStatus, fields: SandboxPatch = {}): Promise<SandboxRecord> => {
    const { sandbox: view } = await plane.sandboxes.create(principal, {});
    const queued = await plane.store.getSandbox(principal.orgId, view.id);
    if (queued === undefined) throw new Error('gone');
    return plane.store.updateSandbox(queued, { status, pool: 'first', updatedAt: longAgo, ...fields });
  };
  /** A sandbox in `status` on pool `first` with an instance there, in `state`. */
  const withInstance = async (status: SandboxStatus, state: 'running' | 'stopped' | 'error' = 'running') => {
    const record = await sandbox(status);
    const instance = adapters.first.plant(record.id, installation, state);
    const updated = await plane.store.updateSandbox(record, { backendRef: instance.ref, updatedAt: longAgo });
    return { record: updated, instance };
  };
  const record = async (id: string) => {
    const found = await plane.store.getSandbox(principal.orgId, id);
    if (found === undefined) throw new Error(`sandbox ${id} is gone`);
    return found;
  };
  const pass = async (): Promise<PoolReconcileReport | undefined> => {
    const report = await reconcile(plane);
    expect(report.ran).toBe(true);
    return report.pools.find((p) => p.pool === 'first');
  };
  const refs = async () => (await adapters.first.list(installation)).map((i) => i.ref).sort();
  return { ...base, installation, sandbox, withInstance, record, pass, refs };
}

const nothing = {
  pool: 'first',
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
};

describe('one reconcile pass, case by case', () => {
  it('reports nothing to do for an empty pool', async () => {
    const { pass } = await setup();
    expect(await pass()).toEqual(nothing);
  });

  it('deletes an instance of no sandbox, and one of a terminated sandbox', async () => {
    const { adapters, installation, sandbox, pass } = await setup();
    adapters.first.plant('sbx_01J00000000000000000000000', installation);
    const ended = await sandbox('terminated');
    adapters.first.plant(ended.id, installation);
    expect(await pass()).toEqual({ ...nothing, listed: 2, orphansDeleted: 2 });
    expect(adapters.first.instanceCount()).toBe(0);
  });

  it('deletes a leftover of a sandbox now running on another pool; keeps those still being placed', async () => {
    const { adapters, installation, sandbox, pass, refs } = await setup();
    const moved = await sandbox('running', { pool: 'second', backendRef: 'fake_elsewhere' });
    adapters.first.plant(moved.id, installation);
    const placing = adapters.first.plant(
      (await sandbox('provisioning', { pool: 'second' })).id,
      installation,
    );
    const waiting = adapters.first.plant((await sandbox('queued', { pool: 'second' })).id, installation);
    expect(await pass()).toEqual({ ...nothing, listed: 3, orphansDeleted: 1 });
    expect(await refs()).toEqual([placing.ref, waiting.ref].sort());
  });

  it('keeps the instance a sandbox of another pool runs on (two pools on one backend)', async () => {
    const { adapters, installation, sandbox, plane, pass } = await setup();
    const other = await sandbox('running', { pool: 'second' });
    const shared = adapters.first.plant(other.id, installation);
    await plane.store.updateSandbox(other, { backendRef: shared.ref, updatedAt: longAgo });
    expect(await pass()).toEqual({ ...nothing, listed: 1 });
    expect(adapters.first.instanceCount()).toBe(1);
  });

  it('deletes a second instance of one sandbox and keeps the one it runs on', async () => {
    const { adapters, installation, withInstance, pass, refs, record } = await setup();
    const { record: running, instance } = await withInstance('running');
    adapters.first.plant(running.id, installation);
    expect(await pass()).toEqual({ ...nothing, listed: 2, duplicatesDeleted: 1 });
    expect(await refs()).toEqual([instance.ref]);
    expect((await record(running.id)).status).toBe('running');
  });

  it('adopts the instance of a sandbox stuck in provisioning past the timeout', async () => {
    const { adapters, installation, sandbox, pass, record } = await setup();
    const stuck = await sandbox('provisioning');
    const instance = adapters.first.plant(stuck.id, installation);
    expect(await pass()).toEqual({ ...nothing, listed: 1, adopted: 1 });
    const adopted = await record(stuck.id);
    expect(adopted).toMatchObject({
      status: 'running',
      backendRef: instance.ref,
      statusMessage: 'adopted by the reconciler after an interrupted provisioning',
      expiresAt: new Date(start + stuck.ttlSeconds * 1000).toISOString(),
    });
  });

  it('adopts neither a provisioning younger than the timeout nor an instance in error', async () => {
    const { adapters, installation, sandbox, pass, record } = await setup();
    const recent = await sandbox('provisioning', { updatedAt: aMinuteAgo });
    adapters.first.plant(recent.id, installation);
    const broken = await sandbox('provisioning');
    adapters.first.plant(broken.id, installation, 'error');
    expect(await pass()).toEqual({ ...nothing, listed: 2 });
    expect((await record(recent.id)).status).toBe('provisioning');
    expect((await record(broken.id)).status).toBe('provisioning');
  });

  it('requeues a provisioning stalled past the timeout with no instance, and sends it to the provision queue', async () => {
    const { queue, sandbox, pass, record } = await setup();
    const stalled = await sandbox('provisioning');
    const young = await sandbox('provisioning', { updatedAt: aMinuteAgo });
    queue.sent.length = 0;
    expect(await pass()).toEqual({ ...nothing, requeued: 1 });
    expect(await record(stalled.id)).toMatchObject({
      status: 'queued',
      statusMessage: 'requeued by the reconciler: provisioning stalled with no instance',
    });
    expect((await record(young.id)).status).toBe('provisioning');
    expect(queue.sent).toEqual([
      { queue: 'provision', message: { sandboxId: stalled.id, orgId: stalled.orgId } },
    ]);
  });

  it('fails a sandbox whose instance disappeared', async () => {
    const { adapters, withInstance, pass, record } = await setup();
    const { record: running, instance } = await withInstance('running');
    adapters.first.vanish(instance.ref);
    expect(await pass()).toEqual({ ...nothing, failed: 1 });
    expect(await record(running.id)).toMatchObject({
      status: 'failed',
      statusMessage: 'backend instance disappeared',
    });
  });

  it('fails a sandbox whose instance the backend reports in error, with its message or saying there is none', async () => {
    const { adapters, withInstance, pass, record } = await setup();
    const said = await withInstance('running');
    adapters.first.setState(said.instance.ref, 'error', 'kernel panic');
    const silent = await withInstance('running', 'error');
    expect(await pass()).toEqual({ ...nothing, listed: 2, failed: 2 });
    expect((await record(said.record.id)).statusMessage).toBe('the backend reports an error: kernel panic');
    expect((await record(silent.record.id)).statusMessage).toBe('the backend reports an error: no message');
  });

  it('follows an instance stopped on the backend for running and paused sandboxes, not for a stop under way', async () => {
    const { withInstance, pass, record } = await setup();
    const running = await withInstance('running', 'stopped');
    const paused = await withInstance('paused', 'stopped');
    const stopping = await withInstance('stopping', 'stopped');
    expect(await pass()).toEqual({ ...nothing, listed: 3, stopped: 2 });
    for (const { record: r } of [running, paused]) {
      expect(await record(r.id)).toMatchObject({
        status: 'stopped',
        statusMessage: 'stopped on the backend',
      });
    }
    expect((await record(stopping.record.id)).status).toBe('stopping');
  });

  it('leaves alone what changed within the grace period, counting it', async () => {
    const { adapters, installation, sandbox, pass, record } = await setup();
    const fresh = await sandbox('running', { updatedAt: justNow });
    adapters.first.plant(fresh.id, installation);
    const freshNoInstance = await sandbox('running', { backendRef: 'fake_gone', updatedAt: justNow });
    // The first is in grace twice (its instance, then itself); the second once (itself).
    expect(await pass()).toEqual({ ...nothing, listed: 1, inGrace: 3 });
    expect((await record(fresh.id)).status).toBe('running');
    expect((await record(freshNoInstance.id)).status).toBe('running');
    expect(adapters.first.instanceCount()).toBe(1);
  });

  it('counts nothing for a change that lost a race or failed, and goes on with the others', async () => {
    const { plane, adapters, withInstance, pass, record } = await setup();
    const raced = await withInstance('running');
    const broken = await withInstance('running');
    const fine = await withInstance('running');
    for (const { instance } of [raced, broken, fine]) adapters.first.vanish(instance.ref);
    const update = plane.store.updateSandbox.bind(plane.store);
    plane.store.updateSandbox = async (current, patch, options) => {
      if (current.id === raced.record.id) throw errors.conflict('changed under us');
      if (current.id === broken.record.id) throw new Error('the table is gone');
      return update(current, patch, options);
    };
    expect(await pass()).toEqual({ ...nothing, failed: 1 });
    expect((await record(fine.record.id)).status).toBe('failed');
    expect((await record(raced.record.id)).status).toBe('running');
  });

  it('counts no adoption, requeue, failure or stop that lost a race', async () => {
    const { plane, adapters, installation, sandbox, withInstance, pass } = await setup();
    const stuck = await sandbox('provisioning');
    adapters.first.plant(stuck.id, installation);
    const stalled = await sandbox('provisioning');
    const broken = await withInstance('running', 'error');
    const halted = await withInstance('running', 'stopped');
    const contested = new Set([stuck.id, stalled.id, broken.record.id, halted.record.id]);
    const update = plane.store.updateSandbox.bind(plane.store);
    plane.store.updateSandbox = async (current, patch, options) => {
      if (contested.has(current.id)) throw errors.conflict('changed under us');
      return update(current, patch, options);
    };
    expect(await pass()).toEqual({ ...nothing, listed: 3 });
  });

  it('looks at every live sandbox of the pool, more than one page of them', async () => {
    const { plane, principal, withInstance, adapters, pass } = await setup();
    await plane.tenancy.setQuota(principal.orgId, {
      maxSandboxes: 1000,
      maxCPU: 1000,
      maxMemoryMiB: 10_000_000,
    });
    const made = [];
    for (let i = 0; i < 101; i++) made.push(await withInstance('running'));
    for (const { instance } of made) adapters.first.vanish(instance.ref);
    expect(await pass()).toEqual({ ...nothing, failed: 101 });
  });

  it('skips a pool whose List failed, changing nothing there', async () => {
    const { adapters, withInstance, pass, record } = await setup();
    const { record: running, instance } = await withInstance('running');
    adapters.first.vanish(instance.ref);
    adapters.first.inject('list', { error: errors.providerUnavailable('connection reset') });
    expect(await pass()).toEqual({ ...nothing, skipped: 'List failed: connection reset' });
    expect((await record(running.id)).status).toBe('running');
  });

  it('skips a stored pool of a kind this build lacks, saying so', async () => {
    const { plane } = await setup();
    const at = new Date(start).toISOString();
    await plane.store.putPool(
      {
        name: 'legacy',
        adapter: 'firecracker',
        trust: 'private',
        maxConcurrency: 0,
        config: {},
        createdAt: at,
        updatedAt: at,
      },
      'create',
      { actor: 'admin', action: 'pool.created', target: 'legacy', details: {} },
    );
    const report = await reconcile(plane);
    expect(report.pools.find((p) => p.pool === 'legacy')).toEqual({
      ...nothing,
      pool: 'legacy',
      skipped: 'no adapter for this pool in this build',
    });
  });

  it('runs one pass at a time: a pass that finds the lease held does nothing, until the holder is done', async () => {
    const slow = new FakeAdapter({ delaysMs: { list: 200 } });
    const { plane } = await setup();
    const first = plane.pools.get('first');
    if (first === undefined) throw new Error('no pool');
    first.adapter = slow;
    const [one, two] = await Promise.all([reconcile(plane), reconcile(plane)]);
    expect([one.ran, two.ran].sort()).toEqual([false, true]);
    expect((one.ran ? two : one).pools).toEqual([]);
    expect((await reconcile(plane)).ran).toBe(true);
  });
});
