import { describe, expect, it } from 'vitest';
import { abandonOperation, runOperation } from '../../../lib/scheduler/operations-worker.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { testPlane } from '../../helpers/plane.ts';

/** The operations worker's crash and abandonment paths, driven by hand (no worker runs on its own). */
describe('the operations worker', () => {
  async function setup() {
    let clock = Date.parse('2026-12-01T00:00:00.000Z');
    const { plane, adapters, queue, principal } = await testPlane({
      operationWaitSeconds: 0,
      now: () => new Date(clock),
    });
    queue.onSend = undefined;
    const { sandbox } = await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    const advance = (ms: number) => {
      clock += ms;
    };
    return { plane, fake: adapters.first, queue, principal, sandboxId: sandbox.id, advance };
  }

  it('deletes the backend snapshot it took for a record deleted meanwhile: no artefact without a record', async () => {
    const { plane, fake, principal, sandboxId, advance } = await setup();
    const { value: creating, pending } = await plane.operations.snapshot(principal, sandboxId, 'disk');
    expect([pending, creating.status]).toEqual([true, 'creating']);
    // Within the operation timeout a creating snapshot is the worker's: 409.
    await expect(plane.operations.deleteSnapshot(principal, creating.id)).rejects.toMatchObject({
      code: 'invalid_state',
    });
    // Past it (its worker gone), the record can go, and frees its quota slot.
    advance(plane.config.scheduler.operationTimeoutSeconds * 1000 + 1);
    expect(await plane.operations.deleteSnapshot(principal, creating.id)).toMatchObject({
      deleted: true,
      backendDeleted: false,
    });
    expect((await plane.store.getUsage(principal.orgId)).snapshots).toBe(0);
    // A late worker still takes it on the backend, finds no record, and deletes what it made.
    await runOperation(plane, { sandboxId, orgId: principal.orgId, snapshotId: creating.id });
    expect(fake.snapshotCount()).toBe(0);
  });

  it('settles a dead-lettered operation: the lifecycle call undone, the snapshot failed with its slot back', async () => {
    const { plane, principal, sandboxId } = await setup();
    const stop = await plane.operations.lifecycle(principal, sandboxId, 'stop');
    expect(stop.value.status).toBe('stopping');
    await abandonOperation(plane, { sandboxId, orgId: principal.orgId, operation: 'stop' });
    expect(await plane.sandboxes.get(principal, sandboxId)).toMatchObject({
      status: 'running',
      operation: { action: 'stop', state: 'failed', error: { code: 'provider_unavailable' } },
    });
    const { value: snapshot } = await plane.operations.snapshot(principal, sandboxId, 'disk');
    await abandonOperation(plane, { sandboxId, orgId: principal.orgId, snapshotId: snapshot.id });
    expect(await plane.operations.getSnapshot(principal, snapshot.id)).toMatchObject({ status: 'failed' });
    expect((await plane.store.getUsage(principal.orgId)).snapshots).toBe(0);
  });

  it('treats a repeated lifecycle call after a crash as done when the instance is already in the target state', async () => {
    const { plane, fake, principal, sandboxId } = await setup();
    await plane.operations.lifecycle(principal, sandboxId, 'pause');
    const record = await plane.store.getSandbox(principal.orgId, sandboxId);
    // The first worker paused the instance and died before writing the record.
    await fake.pause(record?.backendRef ?? '');
    await runOperation(plane, { sandboxId, orgId: principal.orgId, operation: 'pause' });
    expect(await plane.sandboxes.get(principal, sandboxId)).toMatchObject({
      status: 'paused',
      operation: { action: 'pause', state: 'succeeded' },
    });
  });
});
