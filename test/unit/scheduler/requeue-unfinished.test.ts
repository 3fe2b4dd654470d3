import { describe, expect, it } from 'vitest';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { requeueUnfinished } from '../../../lib/scheduler/sweep.ts';
import { testPlane } from '../../helpers/plane.ts';

describe('after a restart that lost the queues', () => {
  it('asks again, at once, for every queued, provisioning, terminating and transitional sandbox, and for nothing settled', async () => {
    const { plane, queue, principal } = await testPlane({ operationWaitSeconds: 0 });
    queue.onSend = undefined;
    // Just created (queued), one being deleted (terminating), one stopping, one running.
    const queued = (await plane.sandboxes.create(principal, {})).sandbox;
    const toDelete = (await plane.sandboxes.create(principal, {})).sandbox;
    const toStop = (await plane.sandboxes.create(principal, {})).sandbox;
    const running = (await plane.sandboxes.create(principal, {})).sandbox;
    for (const { id } of [toDelete, toStop, running])
      await provisionSandbox(plane, { sandboxId: id, orgId: principal.orgId });
    await plane.sandboxes.delete(principal, toDelete.id);
    await plane.operations.lifecycle(principal, toStop.id, 'stop');
    // One whose worker died during its Create: still provisioning.
    const midway = (await plane.sandboxes.create(principal, {})).sandbox;
    const record = await plane.store.getSandbox(principal.orgId, midway.id);
    if (record === undefined) throw new Error('the sandbox is gone');
    await plane.store.updateSandbox(record, { status: 'provisioning', pool: 'first' });
    queue.sent.length = 0;

    const report = await requeueUnfinished(plane);

    expect(report).toMatchObject({ requeuedProvisions: 2, requeuedTerminations: 1, requeuedOperations: 1 });
    const sent = queue.sent.map(({ queue: name, message }) => [name, message.sandboxId]);
    expect(sent).toEqual(
      expect.arrayContaining([
        ['provision', queued.id],
        ['provision', midway.id],
        ['terminate', toDelete.id],
        ['operations', toStop.id],
      ]),
    );
    expect(sent).toHaveLength(4);
    expect(sent.map(([, id]) => id)).not.toContain(running.id);
  });
});
