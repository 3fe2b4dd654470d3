/**
 * The sweep (lib/scheduler/sweep.ts), path by path on the memory store with a fixed clock: expiry, lost
 * messages per kind of wait (docs/scheduler.md's thresholds: 300 s queued, 600 s terminating, 600 + 300 s
 * transitional), paging, skipped races, dead letters, and the requeue after a restart.
 */
import { describe, expect, it } from 'vitest';
import { errors } from '../../../lib/errors.ts';
import type { DeadLetter, DeadLetterSource, QueueName } from '../../../lib/queue/port.ts';
import { requeueUnfinished, sweep } from '../../../lib/scheduler/sweep.ts';
import type { SandboxStatus } from '../../../lib/schemas/sandbox-status.ts';
import type { SandboxRecord } from '../../../lib/store/records.ts';
import type { SandboxPatch } from '../../../lib/store/sandboxes/port.ts';
import { testPlane } from '../../helpers/plane.ts';

const start = Date.parse('2026-12-03T12:00:00.000Z');
const secondsAgo = (s: number) => new Date(start - s * 1000).toISOString();

class Letters implements DeadLetterSource {
  readonly pending: Record<QueueName, { body: string; acked: boolean }[]> = {
    provision: [],
    terminate: [],
    operations: [],
    webhooks: [],
  };
  receives = 0;
  async receive(queue: QueueName, max: number): Promise<DeadLetter[]> {
    this.receives++;
    return this.pending[queue]
      .filter((l) => !l.acked)
      .slice(0, max)
      .map((letter) => ({
        body: letter.body,
        receiveCount: 5,
        ack: async () => {
          letter.acked = true;
        },
      }));
  }
  left(queue: QueueName): number {
    return this.pending[queue].filter((l) => !l.acked).length;
  }
}

async function setup() {
  const base = await testPlane({ now: () => new Date(start) });
  const letters = new Letters();
  const plane = { ...base.plane, deadLetters: letters };
  const { principal } = base;
  const sandbox = async (status: SandboxStatus, fields: SandboxPatch = {}): Promise<SandboxRecord> => {
    const { sandbox: view } = await base.plane.sandboxes.create(principal, {});
    const queued = await plane.store.getSandbox(principal.orgId, view.id);
    if (queued === undefined) throw new Error('gone');
    return plane.store.updateSandbox(queued, { status, pool: 'first', ...fields });
  };
  const record = async (id: string) => plane.store.getSandbox(principal.orgId, id);
  base.queue.sent.length = 0;
  return { ...base, plane, letters, sandbox, record };
}

const none = {
  expired: 0,
  requeuedProvisions: 0,
  requeuedTerminations: 0,
  deadLetteredProvisions: 0,
  deadLetteredTerminations: 0,
  requeuedOperations: 0,
  deadLetteredOperations: 0,
  skipped: 0,
};

describe('a sweep pass, path by path', () => {
  it('sends sandboxes past their expiry to termination, saying so, and wakes the org’s waiters', async () => {
    const { plane, queue, sandbox, record } = await setup();
    const expired = await sandbox('running', { expiresAt: secondsAgo(1), backendRef: 'fake_a' });
    const paused = await sandbox('paused', { expiresAt: secondsAgo(1), backendRef: 'fake_b' });
    const alive = await sandbox('running', {
      expiresAt: new Date(start + 60_000).toISOString(),
      backendRef: 'fake_c',
    });
    const waiter = await sandbox('queued', { waitingFor: 'quota', updatedAt: secondsAgo(10) });
    queue.sent.length = 0;
    expect(await sweep(plane)).toEqual({ ...none, expired: 2 });
    expect(await record(expired.id)).toMatchObject({
      status: 'terminating',
      statusMessage: `expired: its TTL of ${expired.ttlSeconds} s ended at ${secondsAgo(1)}`,
    });
    expect((await record(paused.id))?.status).toBe('terminating');
    expect((await record(alive.id))?.status).toBe('running');
    expect(queue.sent).toContainEqual({
      queue: 'terminate',
      message: { sandboxId: expired.id, orgId: expired.orgId },
    });
    expect(queue.sent).toContainEqual({
      queue: 'provision',
      message: { sandboxId: waiter.id, orgId: waiter.orgId, wake: true },
    });
  });

  it('asks again for queued, terminating and transitional sandboxes idle past their thresholds, touching them', async () => {
    const { plane, queue, sandbox, record } = await setup();
    const lostQueued = await sandbox('queued', { pool: null, updatedAt: secondsAgo(301) });
    await sandbox('queued', { pool: null, updatedAt: secondsAgo(299) });
    const stuck = await sandbox('terminating', { updatedAt: secondsAgo(601) });
    await sandbox('terminating', { updatedAt: secondsAgo(599) });
    const stopping = await sandbox('stopping', { backendRef: 'fake_s', updatedAt: secondsAgo(901) });
    await sandbox('starting', { backendRef: 'fake_t', updatedAt: secondsAgo(899) });
    queue.sent.length = 0;
    expect(await sweep(plane)).toEqual({
      ...none,
      requeuedProvisions: 1,
      requeuedTerminations: 1,
      requeuedOperations: 1,
    });
    expect(queue.sent).toEqual([
      { queue: 'provision', message: { sandboxId: lostQueued.id, orgId: lostQueued.orgId } },
      { queue: 'terminate', message: { sandboxId: stuck.id, orgId: stuck.orgId } },
      { queue: 'operations', message: { sandboxId: stopping.id, orgId: stopping.orgId, operation: 'stop' } },
    ]);
    // Touched: the next pass does not send them again before another threshold.
    expect((await record(lostQueued.id))?.updatedAt).toBe(new Date(start).toISOString());
    expect(await sweep(plane)).toEqual(none);
  });

  it('pages through more due sandboxes than one page holds', async () => {
    const { plane, principal, sandbox } = await setup();
    await plane.tenancy.setQuota(principal.orgId, { maxQueued: 1000 });
    for (let i = 0; i < 101; i++) await sandbox('queued', { pool: null, updatedAt: secondsAgo(400) });
    expect((await sweep(plane)).requeuedProvisions).toBe(101);
  });

  it('skips, counting, a sandbox that changed under it; goes on past one whose write failed', async () => {
    const { plane, queue, sandbox } = await setup();
    const raced = await sandbox('queued', { pool: null, updatedAt: secondsAgo(400) });
    const moved = await sandbox('queued', { pool: null, updatedAt: secondsAgo(400) });
    const gone = await sandbox('queued', { pool: null, updatedAt: secondsAgo(400) });
    const fine = await sandbox('queued', { pool: null, updatedAt: secondsAgo(400) });
    const update = plane.store.updateSandbox.bind(plane.store);
    plane.store.updateSandbox = async (current, patch, options) => {
      if (current.id === raced.id) throw errors.conflict('changed');
      if (current.id === moved.id) throw errors.invalidState('not queued any more');
      if (current.id === gone.id) throw new Error('the table is gone');
      return update(current, patch, options);
    };
    queue.sent.length = 0;
    expect(await sweep(plane)).toEqual({ ...none, requeuedProvisions: 1, skipped: 2 });
    expect(queue.sent.map((s) => s.message.sandboxId)).toEqual([fine.id]);
  });

  describe('dead letters', () => {
    it('fails a sandbox whose provision message was dead-lettered, re-sends a termination, drops what is not a work message', async () => {
      const { plane, queue, letters, sandbox, record } = await setup();
      const stuck = await sandbox('queued', { pool: null, statusMessage: 'waiting for capacity: full' });
      const placed = await sandbox('running', { backendRef: 'fake_r' });
      const ending = await sandbox('terminating', { backendRef: 'fake_e' });
      const message = (r: SandboxRecord) => JSON.stringify({ sandboxId: r.id, orgId: r.orgId });
      letters.pending.provision.push(
        { body: message(stuck), acked: false },
        { body: message(placed), acked: false },
      );
      letters.pending.provision.push({ body: 'not json', acked: false });
      letters.pending.terminate.push({ body: message(ending), acked: false });
      queue.sent.length = 0;
      expect(await sweep(plane)).toEqual({ ...none, deadLetteredProvisions: 1, deadLetteredTerminations: 1 });
      expect(await record(stuck.id)).toMatchObject({
        status: 'failed',
        statusMessage:
          'provisioning gave up: its work message was dead-lettered after 5 receives (last status: waiting for capacity: full)',
      });
      expect((await record(placed.id))?.status).toBe('running');
      expect(queue.sent).toContainEqual({
        queue: 'terminate',
        message: { sandboxId: ending.id, orgId: ending.orgId },
      });
      expect(letters.left('provision') + letters.left('terminate')).toBe(0);
    });

    it('abandons a lifecycle call whose operations message was dead-lettered, back to where it was', async () => {
      const { plane, letters, sandbox, record } = await setup();
      const stopping = await sandbox('stopping', { backendRef: 'fake_s' });
      letters.pending.operations.push({
        body: JSON.stringify({ sandboxId: stopping.id, orgId: stopping.orgId, operation: 'stop' }),
        acked: false,
      });
      expect(await sweep(plane)).toEqual({ ...none, deadLetteredOperations: 1 });
      expect((await record(stopping.id))?.status).toBe('running');
      expect(letters.left('operations')).toBe(0);
    });

    it('acknowledges letters that no longer apply (an unknown sandbox, another stage) without acting', async () => {
      const { plane, queue, letters, sandbox, record } = await setup();
      const waiting = await sandbox('queued', { pool: null });
      const ending = await sandbox('terminating', { backendRef: 'fake_e' });
      const unknown = JSON.stringify({ sandboxId: 'sbx_01J00000000000000000000000', orgId: waiting.orgId });
      letters.pending.provision.push({ body: unknown, acked: false });
      letters.pending.provision.push({
        body: JSON.stringify({ sandboxId: ending.id, orgId: ending.orgId }),
        acked: false,
      });
      letters.pending.terminate.push({ body: unknown, acked: false });
      letters.pending.terminate.push({
        body: JSON.stringify({ sandboxId: waiting.id, orgId: waiting.orgId }),
        acked: false,
      });
      queue.sent.length = 0;
      expect(await sweep(plane)).toEqual(none);
      expect((await record(waiting.id))?.status).toBe('queued');
      expect((await record(ending.id))?.status).toBe('terminating');
      expect(queue.sent).toEqual([]);
      expect(letters.left('provision') + letters.left('terminate')).toBe(0);
    });

    it('leaves a letter it could not act on in the dead-letter queue for the next pass', async () => {
      const { plane, letters, sandbox } = await setup();
      const stuck = await sandbox('queued', { pool: null });
      letters.pending.provision.push({
        body: JSON.stringify({ sandboxId: stuck.id, orgId: stuck.orgId }),
        acked: false,
      });
      plane.store.updateSandbox = async () => {
        throw new Error('the table is gone');
      };
      expect((await sweep(plane)).deadLetteredProvisions).toBe(0);
      expect(letters.left('provision')).toBe(1);
    });

    it('stops asking a dead-letter queue once it is empty', async () => {
      const { plane, letters } = await setup();
      await sweep(plane);
      expect(letters.receives).toBe(3);
    });

    it('takes at most ten batches of ten per queue in one pass', async () => {
      const { plane, letters } = await setup();
      for (let i = 0; i < 105; i++) letters.pending.provision.push({ body: 'junk', acked: false });
      await sweep(plane);
      expect(letters.left('provision')).toBe(5);
    });
  });

  it('after a restart, asks again at once for every unfinished sandbox, provisioning ones included', async () => {
    const { plane, queue, sandbox } = await setup();
    const queued = await sandbox('queued', { pool: null, updatedAt: secondsAgo(1) });
    const provisioning = await sandbox('provisioning', { updatedAt: secondsAgo(1) });
    const terminating = await sandbox('terminating', { updatedAt: secondsAgo(1) });
    const pausing = await sandbox('pausing', { backendRef: 'fake_p', updatedAt: secondsAgo(1) });
    await sandbox('running', { backendRef: 'fake_r', expiresAt: new Date(start + 60_000).toISOString() });
    queue.sent.length = 0;
    expect(await requeueUnfinished(plane)).toEqual({
      ...none,
      requeuedProvisions: 2,
      requeuedTerminations: 1,
      requeuedOperations: 1,
    });
    expect(queue.sent).toEqual([
      { queue: 'provision', message: { sandboxId: queued.id, orgId: queued.orgId } },
      { queue: 'terminate', message: { sandboxId: terminating.id, orgId: terminating.orgId } },
      { queue: 'operations', message: { sandboxId: pausing.id, orgId: pausing.orgId, operation: 'pause' } },
      { queue: 'provision', message: { sandboxId: provisioning.id, orgId: provisioning.orgId } },
    ]);
  });

  it('runs without dead-letter queues or an injected clock', async () => {
    const { plane } = await setup();
    const { deadLetters: _letters, now: _now, ...bare } = plane;
    expect(await sweep(bare)).toEqual(none);
  });

  it('links every org’s pending audit records, past one page of orgs, whatever one org’s linking does', async () => {
    const { plane } = await setup();
    for (let i = 0; i < 101; i++) await plane.tenancy.createOrg({ name: `org-${i}` });
    const linked: string[] = [];
    plane.store.linkAudit = async (orgId) => {
      linked.push(orgId);
      if (linked.length === 1) throw new Error('the chain is busy');
    };
    await sweep(plane);
    // The test plane's own org and the 101 made here.
    expect(new Set(linked).size).toBe(102);
  });
});
