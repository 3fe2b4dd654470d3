import { describe, expect, it } from 'vitest';
import { provisionSandbox } from '../../lib/scheduler/provision.ts';
import { testPlane } from '../helpers/plane.ts';

describe('waking waiters when a reservation is released', () => {
  async function orgAtItsLimit() {
    const setup = await testPlane();
    const { plane, principal, queue } = setup;
    // A second org with room for one sandbox only.
    const org = await plane.tenancy.createOrg({ name: 'small', quota: { maxSandboxes: 1 } });
    const small = { ...principal, orgId: org.id };
    const first = (await plane.sandboxes.create(small, {})).sandbox;
    await provisionSandbox(plane, { sandboxId: first.id, orgId: org.id });
    const second = (await plane.sandboxes.create(small, {})).sandbox;
    const waited = await provisionSandbox(plane, { sandboxId: second.id, orgId: org.id });
    expect(waited.kind).toBe('retry');
    expect((await plane.store.getSandbox(org.id, second.id))?.statusMessage).toMatch(/^waiting for quota/);
    queue.sent.length = 0;
    return { ...setup, small, org, first, second };
  }

  it('sends the oldest waiter of the org a wake when a sandbox is deleted', async () => {
    const { plane, queue, small, org, first, second } = await orgAtItsLimit();
    await plane.sandboxes.delete(small, first.id);
    expect(queue.sent).toContainEqual({
      queue: 'provision',
      message: { sandboxId: second.id, orgId: org.id, wake: true },
    });
    await provisionSandbox(plane, { sandboxId: second.id, orgId: org.id, wake: true });
    expect((await plane.store.getSandbox(org.id, second.id))?.status).toBe('running');
  });

  it('acknowledges a wake that still finds no room, so wakes never multiply a sandbox’s messages', async () => {
    const { plane, org, second } = await orgAtItsLimit();
    expect(await provisionSandbox(plane, { sandboxId: second.id, orgId: org.id, wake: true })).toEqual({
      kind: 'done',
    });
    // Its own (non-wake) message still retries.
    expect((await provisionSandbox(plane, { sandboxId: second.id, orgId: org.id })).kind).toBe('retry');
  });
});
