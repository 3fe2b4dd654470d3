/**
 * The terminate worker's paths beyond provision.test.ts and spec-rules.test.ts: what each leaves on the
 * record and the backend (the seeds: Delete is idempotent, a missing instance is deleted; E0.22: a gone
 * pool or adapter ends the termination with a note, never a retry loop).
 */
import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { errors } from '../../../lib/errors.ts';
import { silentLog } from '../../../lib/log.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { terminateSandbox } from '../../../lib/scheduler/terminate.ts';
import { memoryStore } from '../../../lib/store/memory.ts';
import { RecordingQueue, testPlane } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

async function runningThenDeleted() {
  const setup = await testPlane();
  const { plane, principal } = setup;
  const { sandbox } = await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } });
  const message = { sandboxId: sandbox.id, orgId: principal.orgId };
  await provisionSandbox(plane, message);
  await plane.sandboxes.delete(principal, sandbox.id);
  const record = async () => {
    const stored = await plane.store.getSandbox(principal.orgId, sandbox.id);
    if (stored === undefined) throw new Error('the sandbox is gone');
    return stored;
  };
  return { ...setup, message, record };
}

describe('the terminate worker, path by path', () => {
  it('deletes the instance and ends the sandbox terminated, its usage released', async () => {
    const { plane, adapters, principal, message, record } = await runningThenDeleted();
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'done' });
    expect(await record()).toMatchObject({ status: 'terminated', statusMessage: 'terminated' });
    expect(adapters.first.instanceCount()).toBe(0);
    expect(adapters.first.calls.get('delete')).toBe(1);
    expect(await plane.store.getUsage(principal.orgId)).toMatchObject({ cpu: 0, memoryMiB: 0, sandboxes: 0 });
  });

  it('acknowledges a message for a sandbox that is not terminating, or not there, touching nothing', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const message = { sandboxId: sandbox.id, orgId: principal.orgId };
    await provisionSandbox(plane, message);
    const running = await plane.store.getSandbox(principal.orgId, sandbox.id);
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'done' });
    expect(await plane.store.getSandbox(principal.orgId, sandbox.id)).toEqual(running);
    expect(adapters.first.calls.get('delete') ?? 0).toBe(0);
    expect(
      await terminateSandbox(
        plane,
        { sandboxId: 'sbx_01J00000000000000000000000', orgId: principal.orgId },
        1,
      ),
    ).toEqual({ kind: 'done' });
  });

  it('ends a sandbox that never had an instance without calling the backend', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    await plane.sandboxes.delete(principal, sandbox.id);
    expect(await terminateSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1)).toEqual({
      kind: 'done',
    });
    expect(await plane.store.getSandbox(principal.orgId, sandbox.id)).toMatchObject({
      status: 'terminated',
      statusMessage: 'terminated',
    });
    expect((adapters.first.calls.get('delete') ?? 0) + (adapters.second.calls.get('delete') ?? 0)).toBe(0);
  });

  it('ends with a note, without retrying, when the pool no longer exists anywhere', async () => {
    const { plane, message, record } = await runningThenDeleted();
    const current = await record();
    await plane.store.updateSandbox(current, { pool: 'removed' });
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'done' });
    expect(await record()).toMatchObject({
      status: 'terminated',
      statusMessage: `terminated; pool removed no longer exists, backend instance ${current.backendRef} was not deleted`,
    });
  });

  it('retries a Delete the backend refused, noting why on the record', async () => {
    const { plane, adapters, message, record } = await runningThenDeleted();
    adapters.first.inject('delete', { error: errors.providerUnavailable('connection reset') });
    expect(await terminateSandbox(plane, message, 2)).toEqual({ kind: 'retry', delaySeconds: 10 });
    expect(await record()).toMatchObject({
      status: 'terminating',
      statusMessage: 'delete failed, retrying: connection reset',
    });
    expect(await terminateSandbox(plane, message, 3)).toEqual({ kind: 'done' });
    expect((await record()).status).toBe('terminated');
    expect(adapters.first.instanceCount()).toBe(0);
  });

  it('takes a backend that answers not_found to a Delete as deleted', async () => {
    const { plane, adapters, message, record } = await runningThenDeleted();
    adapters.first.inject('delete', { error: errors.notFound('instance', 'gone') });
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'done' });
    expect(await record()).toMatchObject({ status: 'terminated', statusMessage: 'terminated' });
  });

  it('calls no Delete for a sandbox deleted while provisioning, before any instance existed', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const queued = await plane.store.getSandbox(principal.orgId, sandbox.id);
    if (queued === undefined) throw new Error('gone');
    await plane.store.updateSandbox(queued, { status: 'provisioning', pool: 'first' });
    await plane.sandboxes.delete(principal, sandbox.id);
    expect(await terminateSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1)).toEqual({
      kind: 'done',
    });
    expect((await plane.store.getSandbox(principal.orgId, sandbox.id))?.status).toBe('terminated');
    expect(adapters.first.calls.get('delete') ?? 0).toBe(0);
  });

  it('bounds a Delete that never answers by terminateTimeoutSeconds, then retries', async () => {
    const slow = new FakeAdapter({ delaysMs: { delete: 120_000 } });
    const config = parseConfig({
      devMode: true,
      pools: [{ name: 'slow', adapter: 'fake' }],
      scheduler: { terminateTimeoutSeconds: 5 },
    });
    const store = memoryStore();
    const plane = createControlPlane({
      config,
      store,
      queue: new RecordingQueue(),
      pools: await buildPools(config, { log: silentLog, adapters: { slow }, store }),
      log: silentLog,
    });
    const principal = orgPrincipal((await plane.tenancy.createOrg({ name: 'slow' })).id);
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const message = { sandboxId: sandbox.id, orgId: principal.orgId };
    await provisionSandbox(plane, message);
    await plane.sandboxes.delete(principal, sandbox.id);
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'retry', delaySeconds: 5 });
    expect((await store.getSandbox(principal.orgId, sandbox.id))?.statusMessage).toMatch(
      /^delete failed, retrying: /,
    );
  });

  it('finds a pool added through another container since this one last looked, and deletes there', async () => {
    const store = memoryStore();
    const lab = new FakeAdapter();
    const config = parseConfig({ devMode: true, pools: [] });
    const container = async () =>
      createControlPlane({
        config,
        store,
        queue: new RecordingQueue(),
        pools: await buildPools(config, { log: silentLog, adapters: { lab }, store }),
        log: silentLog,
      });
    const [worker, api] = [await container(), await container()];
    await worker.pools.sync(true);
    await api.poolAdmin.create(
      { name: 'lab', adapter: 'fake', trust: 'private', maxConcurrency: 0, config: {} },
      'admin',
    );
    const principal = orgPrincipal((await api.tenancy.createOrg({ name: 'o' })).id);
    const { sandbox } = await api.sandboxes.create(principal, { placement: { allowedPools: ['lab'] } });
    const message = { sandboxId: sandbox.id, orgId: principal.orgId };
    await provisionSandbox(api, message);
    await api.sandboxes.delete(principal, sandbox.id);
    expect(await terminateSandbox(worker, message, 1)).toEqual({ kind: 'done' });
    expect(await store.getSandbox(principal.orgId, sandbox.id)).toMatchObject({
      status: 'terminated',
      statusMessage: 'terminated',
    });
    expect(lab.instanceCount()).toBe(0);
  });
});
