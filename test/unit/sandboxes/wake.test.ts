import { describe, expect, it } from 'vitest';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { testPlane } from '../../helpers/plane.ts';

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
    const waiting = await plane.store.getSandbox(org.id, second.id);
    expect(waiting?.statusMessage).toMatch(/^waiting for quota/);
    expect(waiting?.waitingFor).toBe('quota');
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

  it('wakes by the typed wait reason, whatever the words of the status message', async () => {
    const { plane, queue, small, org, first, second } = await orgAtItsLimit();
    const record = await plane.store.getSandbox(org.id, second.id);
    if (record === undefined) throw new Error('the waiter is gone');
    // Reworded (as a later release might word it): the wake-up must not depend on the text.
    await plane.store.updateSandbox(record, { statusMessage: 'quota full, will retry' });
    await plane.sandboxes.delete(small, first.id);
    expect(queue.sent).toContainEqual({
      queue: 'provision',
      message: { sandboxId: second.id, orgId: org.id, wake: true },
    });
  });

  it('wakes no queued sandbox that is not waiting (its first attempt is still on the way)', async () => {
    const { plane, queue, small, org, first } = await orgAtItsLimit();
    // Words that look like a wait, but no wait reason: only the typed field counts.
    const fresh = (await plane.sandboxes.create(small, {})).sandbox;
    const record = await plane.store.getSandbox(org.id, fresh.id);
    if (record === undefined) throw new Error('the sandbox is gone');
    await plane.store.updateSandbox(record, { statusMessage: 'waiting for capacity: looks like it' });
    await plane.sandboxes.delete(small, first.id);
    const woken = queue.sent.filter((s) => 'wake' in s.message).map((s) => s.message.sandboxId);
    expect(woken).not.toContain(fresh.id);
  });

  it('clears the reason once the sandbox leaves the queue, and shows it while it waits', async () => {
    const { plane, small, org, first, second } = await orgAtItsLimit();
    expect((await plane.sandboxes.get(small, second.id)).waitingFor).toBe('quota');
    await plane.sandboxes.delete(small, first.id);
    await provisionSandbox(plane, { sandboxId: second.id, orgId: org.id, wake: true });
    const running = await plane.store.getSandbox(org.id, second.id);
    expect(running?.status).toBe('running');
    expect(running?.waitingFor).toBeNull();
  });

  describe("through the API, with the org's count of waiting sandboxes read along with the key", () => {
    const deleteOverHttp = async (
      plane: Awaited<ReturnType<typeof testPlane>>['plane'],
      key: string,
      id: string,
    ) =>
      plane.handleHttp({
        method: 'DELETE',
        path: `/v1/sandboxes/${id}`,
        query: {},
        headers: { authorization: `Bearer ${key}` },
        body: undefined,
        requestId: 'wake',
      });

    it('wakes the waiter of the org', async () => {
      const { plane, queue, org, first, second } = await orgAtItsLimit();
      const { key } = await plane.tenancy.createKey(org.id, { name: 'k', role: 'member' });
      await plane.handleHttp({
        method: 'GET',
        path: `/v1/sandboxes/${first.id}`,
        query: {},
        headers: { authorization: `Bearer ${key}` },
        body: undefined,
        requestId: 'warm',
      });
      expect((await deleteOverHttp(plane, key, first.id)).status).toBe(202);
      expect(queue.sent).toContainEqual({
        queue: 'provision',
        message: { sandboxId: second.id, orgId: org.id, wake: true },
      });
    });

    it("does not read the org's queue when none of its sandboxes waits", async () => {
      const { plane, principal, queue } = await testPlane();
      const running = (await plane.sandboxes.create(principal, {})).sandbox;
      await provisionSandbox(plane, { sandboxId: running.id, orgId: principal.orgId });
      const { key } = await plane.tenancy.createKey(principal.orgId, { name: 'k', role: 'member' });
      // The first call tells this container the key's org; the delete then reads the count with the key.
      await plane.handleHttp({
        method: 'GET',
        path: `/v1/sandboxes/${running.id}`,
        query: {},
        headers: { authorization: `Bearer ${key}` },
        body: undefined,
        requestId: 'warm',
      });
      const asked: string[] = [];
      const listQueued = plane.store.listQueued.bind(plane.store);
      plane.store.listQueued = async (orgId, limit) => {
        asked.push(orgId);
        return listQueued(orgId, limit);
      };
      queue.sent.length = 0;
      expect((await deleteOverHttp(plane, key, running.id)).status).toBe(202);
      expect(asked).toEqual([]);
      expect(queue.sent.map((s) => s.queue)).toEqual(['terminate']);
    });
  });
});
