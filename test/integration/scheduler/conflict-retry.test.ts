import { describe, expect, it } from 'vitest';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import type { Store } from '../../../lib/store/port.ts';
import { testPlane } from '../../helpers/plane.ts';

/** A worker's write lands between the API's read and its write: the API does the read-modify-write again. */
function interleaveOneWrite(store: Store): { interleaved: () => number } {
  const original = store.updateSandbox.bind(store);
  let count = 0;
  let armed = true;
  store.updateSandbox = async (current, patch, options) => {
    if (armed) {
      armed = false;
      count++;
      // Someone else moves the sandbox on first: the caller's copy is now one version behind.
      await original(current, { statusMessage: 'a worker noted progress' });
    }
    return original(current, patch, options);
  };
  return { interleaved: () => count };
}

describe('read-modify-write retried on a version conflict', () => {
  it('deletes a sandbox a worker just updated, instead of answering 409', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const race = interleaveOneWrite(plane.store);
    const deleted = await plane.sandboxes.delete(principal, sandbox.id);
    expect(race.interleaved()).toBe(1);
    expect(deleted.status).toBe('terminating');
  });

  it('stops and starts a running sandbox while a worker writes to it in between', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    let race = interleaveOneWrite(plane.store);
    expect((await plane.operations.lifecycle(principal, sandbox.id, 'stop')).value.status).toBe('stopped');
    expect(race.interleaved()).toBe(1);
    race = interleaveOneWrite(plane.store);
    expect((await plane.operations.lifecycle(principal, sandbox.id, 'start')).value.status).toBe('running');
    expect(race.interleaved()).toBe(1);
  });

  it('patches labels on a sandbox a worker just updated', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const race = interleaveOneWrite(plane.store);
    const updated = await plane.sandboxes.update(principal, sandbox.id, { labels: { team: 'a' } });
    expect(race.interleaved()).toBe(1);
    expect(updated.labels).toEqual({ team: 'a' });
  });
});
