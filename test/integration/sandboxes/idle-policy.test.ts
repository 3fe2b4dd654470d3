import { describe, expect, it } from 'vitest';
import type { WorkMessage } from '../../../lib/queue/port.ts';
import { runOperation } from '../../../lib/scheduler/operations-worker.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { testPlane } from '../../helpers/plane.ts';

/**
 * The idle policy driven by hand on a clock the test moves: the delayed checks are taken from the
 * queue and run when the test says (no worker runs them on its own); lifecycle calls the checks and
 * calls ask for are run as SQS would, at once.
 */
describe('the idle policy', () => {
  async function setup(idle: { afterSeconds: number; action?: 'pause' | 'stop' } | undefined) {
    let clock = Date.parse('2026-12-01T00:00:00.000Z');
    const { plane, queue, principal } = await testPlane({
      operationWaitSeconds: 5,
      now: () => new Date(clock),
    });
    queue.onSend = (name, message) => {
      if (name === 'operations' && message.idleSince === undefined) void runOperation(plane, message);
    };
    const { sandbox } = await plane.sandboxes.create(principal, {
      placement: { allowedPools: ['first'] },
      ...(idle !== undefined && { idle }),
    });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    const checks = () =>
      queue.sent.filter(
        (sent) => sent.message.idleSince !== undefined && sent.message.sandboxId === sandbox.id,
      );
    const lastCheck = (): { message: WorkMessage; delay: number } => {
      const last = checks().at(-1);
      if (last === undefined) throw new Error('no idle check was queued');
      return { message: last.message, delay: last.options?.delaySeconds ?? 0 };
    };
    const advance = (seconds: number) => {
      clock += seconds * 1000;
    };
    const get = () => plane.sandboxes.get(principal, sandbox.id);
    /** The lifecycle call a check or a call queued has run (the worker runs it on its own, at once). */
    const until = async (status: string) => {
      await expect.poll(async () => (await get()).status, { timeout: 20_000 }).toBe(status);
      return get();
    };
    const actions = async () =>
      (await plane.store.listAudit(principal.orgId, { limit: 100 })).items
        .filter((event) => event.target === sandbox.id)
        .map((event) => `${event.action}${event.details.cause === 'idle' ? ' (idle)' : ''}`);
    return { plane, principal, id: sandbox.id, checks, lastCheck, advance, get, until, actions };
  }

  it('queues one check for the idle period when the sandbox starts running, and none without a policy', async () => {
    const idle = await setup({ afterSeconds: 60 });
    expect(idle.checks()).toHaveLength(1);
    expect(idle.lastCheck().delay).toBe(60);
    expect(await idle.get()).toMatchObject({
      status: 'running',
      idle: { afterSeconds: 60, action: null, idledAt: null },
    });
    const none = await setup(undefined);
    expect(none.checks()).toHaveLength(0);
    expect((await none.get()).idle).toBeNull();
  });

  it('a call within the period moves the next check to its new due time; past it, the sandbox pauses with the cause idle', async () => {
    const t = await setup({ afterSeconds: 60 });
    t.advance(30);
    await t.plane.sandboxes.exec(t.principal, t.id, { command: 'true' });
    t.advance(30);
    await runOperation(t.plane, t.lastCheck().message);
    expect((await t.get()).status).toBe('running');
    // Last call at 30 s: idle at 90 s, 30 s from now.
    expect(t.checks()).toHaveLength(2);
    expect(t.lastCheck().delay).toBe(30);
    t.advance(30);
    await runOperation(t.plane, t.lastCheck().message);
    expect(await t.until('paused')).toMatchObject({
      status: 'paused',
      idle: { idledAt: '2026-12-01T00:01:30.000Z' },
      operation: { action: 'pause', state: 'succeeded', cause: 'idle' },
    });
    expect(await t.actions()).toEqual(
      expect.arrayContaining(['sandbox.pausing (idle)', 'sandbox.paused (idle)']),
    );
  });

  it('resumes an idle-paused sandbox on the next exec, and the checks of the earlier stretch are void', async () => {
    const t = await setup({ afterSeconds: 60 });
    const first = t.lastCheck().message;
    t.advance(60);
    await runOperation(t.plane, first);
    await t.until('paused');
    const result = await t.plane.sandboxes.exec(t.principal, t.id, { command: 'echo back' });
    expect(result.exitCode).toBe(0);
    expect(await t.get()).toMatchObject({ status: 'running', idle: { idledAt: null } });
    expect(await t.actions()).toEqual(
      expect.arrayContaining(['sandbox.resuming (idle)', 'sandbox.running (idle)']),
    );
    // The new stretch has its own check; the first one, delivered again, changes nothing.
    expect(t.checks()).toHaveLength(2);
    expect(t.lastCheck().message.idleSince).not.toBe(first.idleSince);
    t.advance(120);
    await runOperation(t.plane, first);
    expect((await t.get()).status).toBe('running');
    expect(t.checks()).toHaveLength(2);
  });

  it('stops instead of pausing when the policy says so, and a file call starts it again', async () => {
    const t = await setup({ afterSeconds: 10, action: 'stop' });
    t.advance(10);
    await runOperation(t.plane, t.lastCheck().message);
    expect(await t.until('stopped')).toMatchObject({ operation: { action: 'stop', cause: 'idle' } });
    await t.plane.operations.writeFile(t.principal, t.id, '/work/a.txt', Buffer.from('a'));
    expect((await t.get()).status).toBe('running');
  });

  it('leaves a sandbox paused by its caller alone: only an idle pause resumes on access', async () => {
    const t = await setup({ afterSeconds: 60 });
    await t.plane.operations.lifecycle(t.principal, t.id, 'pause');
    await t.until('paused');
    await expect(t.plane.sandboxes.exec(t.principal, t.id, { command: 'true' })).rejects.toMatchObject({
      code: 'invalid_state',
    });
  });

  it('takes the org default unless the request names one (null: none)', async () => {
    const t = await setup(undefined);
    await t.plane.tenancy.setIdlePolicy(t.principal.orgId, { afterSeconds: 300 });
    const { sandbox: inherits } = await t.plane.sandboxes.create(t.principal, {});
    const { sandbox: own } = await t.plane.sandboxes.create(t.principal, { idle: { afterSeconds: 5 } });
    const { sandbox: none } = await t.plane.sandboxes.create(t.principal, { idle: null });
    expect([inherits.idle?.afterSeconds, own.idle?.afterSeconds, none.idle]).toEqual([300, 5, null]);
  });
});
