import { describe, expect, it } from 'vitest';
import { errors } from '../../../lib/errors.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { terminateSandbox } from '../../../lib/scheduler/terminate.ts';
import { testPlane } from '../../helpers/plane.ts';

async function queuedSandbox(allowedPools?: string[]) {
  const setup = await testPlane();
  const { sandbox: view } = await setup.plane.sandboxes.create(
    setup.principal,
    allowedPools === undefined ? {} : { placement: { allowedPools } },
  );
  const message = { sandboxId: view.id, orgId: view.orgId };
  const record = async () => {
    const stored = await setup.plane.store.getSandbox(view.orgId, view.id);
    if (stored === undefined) throw new Error('record vanished');
    return stored;
  };
  return { ...setup, message, record };
}

describe('provisionSandbox', () => {
  it('creates the instance and moves the sandbox to running with expiresAt', async () => {
    const { plane, adapters, message, record } = await queuedSandbox();
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'done' });
    const sandbox = await record();
    expect(sandbox).toMatchObject({ status: 'running', pool: 'first', attempts: 0 });
    expect(sandbox.backendRef).toMatch(/^fake_/);
    expect(Date.parse(sandbox.expiresAt ?? '') - Date.parse(sandbox.updatedAt)).toBe(3600 * 1000);
    expect(adapters.first.instanceCount()).toBe(1);
  });

  it('acknowledges a duplicate delivery without a second Create', async () => {
    const { plane, adapters, message } = await queuedSandbox();
    await provisionSandbox(plane, message);
    await provisionSandbox(plane, message);
    await provisionSandbox(plane, message);
    expect(adapters.first.calls.get('create')).toBe(1);
  });

  it('resumes a sandbox left in provisioning by a crashed worker without a second instance', async () => {
    const { plane, adapters, message, record } = await queuedSandbox();
    // The worker died after Create succeeded and before the record said running: the record is left
    // in provisioning on pool second, and the backend holds the instance.
    const queued = await record();
    await plane.store.updateSandbox(queued, { status: 'provisioning', pool: 'second' });
    await adapters.second.create({
      id: queued.id,
      installation: await plane.store.installation(),
      resources: queued.resources,
      env: {},
      labels: {},
    });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'done' });
    expect(await record()).toMatchObject({ status: 'running', pool: 'second' });
    expect(adapters.first.instanceCount() + adapters.second.instanceCount()).toBe(1);
  });

  it('insufficient_capacity tries the next pool without counting an attempt', async () => {
    const { plane, adapters, message, record } = await queuedSandbox();
    adapters.first.inject('create', { error: errors.insufficientCapacity('node full') });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'done' });
    const sandbox = await record();
    expect(sandbox).toMatchObject({ status: 'running', pool: 'second', attempts: 0 });
    expect(sandbox.placement.rejected).toEqual([
      { pool: 'first', reason: 'insufficient capacity: node full' },
    ]);
    expect(plane.pools.isHealthy('first')).toBe(true);
  });

  it('insufficient_capacity everywhere requeues after 2 s, uncounted', async () => {
    const { plane, adapters, message, record } = await queuedSandbox();
    adapters.first.inject('create', { error: errors.insufficientCapacity('full') });
    adapters.second.inject('create', { error: errors.insufficientCapacity('full') });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'retry', delaySeconds: 2 });
    expect(await record()).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('sandbox_failed counts the attempt, backs off, and leaves the pool healthy', async () => {
    const { plane, adapters, message, record } = await queuedSandbox(['first']);
    adapters.first.inject('create', { error: errors.sandboxFailed('pod never ready') });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'retry', delaySeconds: 4 });
    expect(await record()).toMatchObject({ status: 'queued', attempts: 1 });
    expect(plane.pools.isHealthy('first')).toBe(true);
  });

  it('provider_unavailable marks the pool unhealthy and backs off 2 s x 2^attempts', async () => {
    const { plane, adapters, message, record } = await queuedSandbox(['first']);
    adapters.first.inject('create', { error: errors.providerUnavailable('connection refused') });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'retry', delaySeconds: 4 });
    expect(await record()).toMatchObject({ status: 'queued', attempts: 1 });
    expect(plane.pools.isHealthy('first')).toBe(false);
  });

  it('invalid_request fails the sandbox at once and leaves the pool healthy', async () => {
    const { plane, adapters, message, record } = await queuedSandbox(['first']);
    adapters.first.inject('create', { error: errors.invalidRequest('image does not exist') });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'done' });
    const sandbox = await record();
    expect(sandbox.status).toBe('failed');
    expect(sandbox.statusMessage).toContain('image does not exist');
    expect(plane.pools.isHealthy('first')).toBe(true);
  });

  it('fails after maxAttempts counted attempts with the last reason', async () => {
    const { plane, adapters, message, record } = await queuedSandbox(['first']);
    adapters.first.inject('create', { error: errors.sandboxFailed('crash loop'), times: 3 });
    expect(await provisionSandbox(plane, message)).toMatchObject({ kind: 'retry' });
    expect(await provisionSandbox(plane, message)).toMatchObject({ kind: 'retry' });
    expect(await provisionSandbox(plane, message)).toEqual({ kind: 'done' });
    const sandbox = await record();
    expect(sandbox).toMatchObject({ status: 'failed', attempts: 3 });
    expect(sandbox.statusMessage).toMatch(/crash loop.*gave up after 3 attempts/);
  });

  it('hands an instance created during a delete to termination instead of leaking it', async () => {
    const { plane, adapters, principal, message, record } = await queuedSandbox(['first']);
    adapters.first.setExec(undefined);
    // Delete lands while Create is in flight: simulate by deleting inside the Create call.
    const original = adapters.first.create.bind(adapters.first);
    adapters.first.create = async (request) => {
      const instance = await original(request);
      await plane.sandboxes.delete(principal, message.sandboxId);
      return instance;
    };
    await provisionSandbox(plane, message);
    const sandbox = await record();
    expect(sandbox.status).toBe('terminating');
    expect(sandbox.backendRef).toMatch(/^fake_/);
    await terminateSandbox(plane, message, 1);
    expect((await record()).status).toBe('terminated');
    expect(adapters.first.instanceCount()).toBe(0);
  });
});

describe('terminateSandbox', () => {
  it('treats a missing instance as deleted', async () => {
    const { plane, adapters, principal, message, record } = await queuedSandbox(['first']);
    await provisionSandbox(plane, message);
    adapters.first.vanish((await record()).backendRef ?? '');
    await plane.sandboxes.delete(principal, message.sandboxId);
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'done' });
    expect((await record()).status).toBe('terminated');
  });

  it('retries a failed Delete with a growing, capped delay', async () => {
    const { plane, adapters, principal, message, record } = await queuedSandbox(['first']);
    await provisionSandbox(plane, message);
    await plane.sandboxes.delete(principal, message.sandboxId);
    adapters.first.inject('delete', { error: errors.providerUnavailable('timeout'), times: 10 });
    expect(await terminateSandbox(plane, message, 1)).toEqual({ kind: 'retry', delaySeconds: 5 });
    expect(await terminateSandbox(plane, message, 3)).toEqual({ kind: 'retry', delaySeconds: 20 });
    expect(await terminateSandbox(plane, message, 20)).toEqual({ kind: 'retry', delaySeconds: 300 });
    expect((await record()).status).toBe('terminating');
  });
});
