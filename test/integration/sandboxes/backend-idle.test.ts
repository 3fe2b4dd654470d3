import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { daytonaConfigSchema } from '../../../adapters/daytona/config.ts';
import { DaytonaAdapter } from '../../../adapters/daytona/daytona-adapter.ts';
import { lambdaMicrovmsConfigSchema } from '../../../adapters/lambda-microvms/config.ts';
import { LambdaMicrovmsAdapter } from '../../../adapters/lambda-microvms/lambda-microvms-adapter.ts';
import type { WorkMessage } from '../../../lib/queue/port.ts';
import { runOperation } from '../../../lib/scheduler/operations-worker.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { reconcile } from '../../../lib/scheduler/reconcile.ts';
import type { IdlePolicy } from '../../../lib/schemas/sandbox-parts.ts';
import { DaytonaFake } from '../../fakes/daytona-server.ts';
import { LambdaMicrovmsFake } from '../../fakes/lambda-microvms-server.ts';
import { fakeAccessKeyId, fakeImage, microvmsClient } from '../../helpers/lambda-microvms.ts';
import { testPlane } from '../../helpers/plane.ts';

/**
 * An idle policy a backend can keep itself (Daytona's auto-stop in whole minutes, Lambda MicroVMs' idle
 * policy from 60 s) is handed to it at create; the control plane follows what the backend did (its check,
 * a call, the reconciler), records it as idleness and resumes on the next call. The fakes keep the
 * backends' timers: Daytona's on the test's clock, Lambda MicroVMs' when the test says the period passed.
 */
describe('idle policies kept by the backend', () => {
  const start = Date.parse('2026-12-04T00:00:00.000Z');
  let clock = start;
  const daytona = new DaytonaFake({ now: () => clock });
  const microvms = new LambdaMicrovmsFake({ images: [fakeImage], accessKeyId: fakeAccessKeyId });

  beforeAll(async () => {
    await Promise.all([daytona.start(), microvms.start()]);
  });
  afterAll(async () => {
    await Promise.all([daytona.stop(), microvms.stop()]);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  async function setup(pool: 'daytona' | 'microvms', idle: IdlePolicy) {
    // Each test from the same instant (sandboxes of earlier tests are then younger than it: never idle).
    clock = start;
    const { plane, queue, principal } = await testPlane({
      operationWaitSeconds: 10,
      now: () => new Date(clock),
      pools: [
        {
          spec: { name: 'daytona', adapter: 'daytona' },
          adapter: new DaytonaAdapter(
            daytonaConfigSchema.parse({ apiURL: `${daytona.url}/api`, pollIntervalMs: 10 }),
            'dtn-test-key',
          ),
        },
        {
          spec: { name: 'microvms', adapter: 'lambda-microvms', config: { image: fakeImage } },
          adapter: new LambdaMicrovmsAdapter(
            lambdaMicrovmsConfigSchema.parse({
              image: fakeImage,
              pollIntervalMs: 20,
              readyTimeoutSeconds: 20,
            }),
            { client: microvmsClient(microvms.url) },
          ),
        },
      ],
    });
    // Lifecycle calls run at once, as SQS would deliver them; idle checks only when the test says.
    queue.onSend = (name, message) => {
      if (name === 'operations' && message.idleSince === undefined) void runOperation(plane, message);
    };
    const { sandbox } = await plane.sandboxes.create(principal, {
      placement: { allowedPools: [pool] },
      idle,
    });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 1);
    const get = () => plane.sandboxes.get(principal, sandbox.id);
    const ref = async () => {
      const record = await plane.store.getSandbox(principal.orgId, sandbox.id);
      if (record?.backendRef == null) throw new Error('no backend instance');
      return record.backendRef;
    };
    const lastCheck = (): { message: WorkMessage; delay: number } => {
      const last = queue.sent
        .filter((sent) => sent.message.idleSince !== undefined && sent.message.sandboxId === sandbox.id)
        .at(-1);
      if (last === undefined) throw new Error('no idle check was queued');
      return { message: last.message, delay: last.options?.delaySeconds ?? 0 };
    };
    const actions = async () =>
      (await plane.store.listAudit(principal.orgId, { limit: 100 })).items
        .filter((event) => event.target === sandbox.id && event.action !== 'sandbox.created')
        .map((event) => `${event.action}${event.details.cause === 'idle' ? ' (idle)' : ''}`);
    const exec = (command: string) => plane.sandboxes.exec(principal, sandbox.id, { command });
    return { plane, principal, id: sandbox.id, get, ref, lastCheck, actions, exec };
  }

  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };

  it('Daytona: a stop after whole minutes becomes its auto-stop; the control plane follows it and starts the sandbox on the next call', async () => {
    const t = await setup('daytona', { afterSeconds: 120, action: 'stop' });
    expect(daytona.received.createBodies.at(-1)).toMatchObject({ autoStopInterval: 2 });
    expect((await t.get()).idle).toMatchObject({ afterSeconds: 120, enforcedBy: 'backend' });
    expect(t.lastCheck().delay).toBe(120);
    advance(60);
    await t.exec('true');
    advance(60);
    // The check at 120 s: the exec at 60 s moved the due time (and Daytona's timer) to 180 s.
    await runOperation(t.plane, t.lastCheck().message);
    expect((await t.get()).status).toBe('running');
    expect(t.lastCheck().delay).toBe(60);
    advance(60);
    expect(daytona.sandboxes.get(await t.ref())?.state).toBe('started');
    await runOperation(t.plane, t.lastCheck().message);
    // Daytona stopped it (its timer ran out as the check's read arrived); the control plane only followed.
    expect(daytona.sandboxes.get(await t.ref())?.state).toBe('stopped');
    expect(await t.get()).toMatchObject({
      status: 'stopped',
      statusMessage: "idle for 120 s: stopped by the backend's idle timer",
      idle: { idledAt: '2026-12-04T00:03:00.000Z', enforcedBy: 'backend' },
    });
    expect(await t.actions()).toEqual(['sandbox.provisioning', 'sandbox.running', 'sandbox.stopped (idle)']);
    // The next call starts it first and runs.
    expect((await t.exec('echo back')).stdout).toBe('back\n');
    expect((await t.get()).idle).toMatchObject({ idledAt: null });
    expect((await t.actions()).slice(3)).toEqual(['sandbox.starting (idle)', 'sandbox.running (idle)']);
  });

  it('Daytona: a call after the backend stopped it, before any check saw it, starts it and runs', async () => {
    const t = await setup('daytona', { afterSeconds: 60, action: 'stop' });
    advance(61);
    expect((await t.exec('echo after')).stdout).toBe('after\n');
    expect(await t.actions()).toEqual([
      'sandbox.provisioning',
      'sandbox.running',
      'sandbox.stopped (idle)',
      'sandbox.starting (idle)',
      'sandbox.running (idle)',
    ]);
  });

  it('Daytona: the reconciler follows a stop of the auto-stop timer as idleness', async () => {
    const t = await setup('daytona', { afterSeconds: 60, action: 'stop' });
    advance(90);
    const report = await reconcile(t.plane);
    expect(report.pools.find((p) => p.pool === 'daytona')).toMatchObject({ stopped: 1 });
    expect(await t.get()).toMatchObject({ status: 'stopped', idle: { idledAt: '2026-12-04T00:01:30.000Z' } });
    expect((await t.actions()).at(-1)).toBe('sandbox.stopped (idle)');
  });

  it('Daytona: a period that is not whole minutes stays with the control plane (auto-stop off)', async () => {
    const t = await setup('daytona', { afterSeconds: 90, action: 'stop' });
    expect(daytona.received.createBodies.at(-1)).toMatchObject({ autoStopInterval: 0 });
    expect((await t.get()).idle).toMatchObject({ enforcedBy: 'control-plane' });
    advance(90);
    await runOperation(t.plane, t.lastCheck().message);
    await expect.poll(async () => (await t.get()).status, { timeout: 20_000 }).toBe('stopped');
    expect((await t.actions()).slice(2)).toEqual(['sandbox.stopping (idle)', 'sandbox.stopped (idle)']);
  });

  it("Daytona: a command running longer than half the period resets the backend's timer while it runs", async () => {
    const t = await setup('daytona', { afterSeconds: 120, action: 'stop' });
    const ref = await t.ref();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    // Commands run in the sandbox's folder on the fake's host: `tmp/` is the sandbox's /tmp.
    const running = t.exec('touch tmp/started; while [ ! -e tmp/go ]; do sleep 0.05; done; echo done');
    await expect.poll(() => daytona.host.read(ref, '/tmp/started'), { timeout: 10_000 }).toBeDefined();
    advance(100);
    // Half the period later the control plane marks the sandbox active on Daytona.
    vi.advanceTimersByTime(60_000);
    await expect.poll(() => daytona.sandboxes.get(ref)?.lastActivityAt, { timeout: 10_000 }).toBe(clock);
    await t.plane.operations.writeFile(t.principal, t.id, '/tmp/go', Buffer.from(''));
    expect((await running).stdout).toBe('done\n');
  });

  it('Lambda MicroVMs: a pause from 60 s becomes the VM idle policy; the control plane follows the suspension and resumes on the next call', async () => {
    const t = await setup('microvms', { afterSeconds: 60 });
    const ref = await t.ref();
    expect(microvms.vms.get(ref)?.idlePolicy).toEqual({
      maxIdleDurationSeconds: 60,
      suspendedDurationSeconds: 3600,
      autoResumeEnabled: false,
    });
    expect((await t.get()).idle).toMatchObject({ enforcedBy: 'backend' });
    await t.exec('echo once >> count');
    advance(60);
    await microvms.idleSuspend(ref);
    await runOperation(t.plane, t.lastCheck().message);
    expect(await t.get()).toMatchObject({ status: 'paused', idle: { idledAt: '2026-12-04T00:01:00.000Z' } });
    expect(await t.actions()).toEqual(['sandbox.provisioning', 'sandbox.running', 'sandbox.paused (idle)']);
    // Memory and files kept: the resumed VM has the earlier command's output.
    expect((await t.exec('echo once >> count; wc -l < count')).stdout.trim()).toBe('2');
    expect(microvms.vms.get(ref)?.state).toBe('RUNNING');
    expect((await t.actions()).slice(3)).toEqual(['sandbox.resuming (idle)', 'sandbox.running (idle)']);
    await t.plane.sandboxes.delete(t.principal, t.id);
  });

  it('Lambda MicroVMs: a period under the service minimum stays with the control plane (no VM idle policy)', async () => {
    const t = await setup('microvms', { afterSeconds: 30 });
    const ref = await t.ref();
    expect(microvms.vms.get(ref)?.idlePolicy).toBeUndefined();
    expect((await t.get()).idle).toMatchObject({ enforcedBy: 'control-plane' });
    advance(30);
    await runOperation(t.plane, t.lastCheck().message);
    await expect.poll(async () => (await t.get()).status, { timeout: 20_000 }).toBe('paused');
    expect((await t.actions()).slice(2)).toEqual(['sandbox.pausing (idle)', 'sandbox.paused (idle)']);
    await t.plane.sandboxes.delete(t.principal, t.id);
  });
});
