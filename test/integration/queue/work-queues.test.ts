import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { type LocalRuntime, startLocalRuntime } from '../../../infra/local/runtime.ts';
import { parseConfig } from '../../../lib/config.ts';
import { errors } from '../../../lib/errors.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';
import { waitFor } from '../../helpers/http-client.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/**
 * The workers behind the embedded SQS server: real SQS protocol, pollers with Lambda event source
 * mapping semantics. Delays are asserted on the message's visibility deadline in the queue, not by time.
 */
describe('work queues on the embedded SQS server', () => {
  let runtime: LocalRuntime;
  let fake: FakeAdapter;
  let flaky: FakeAdapter;
  let principal: Extract<Principal, { kind: 'org' }>;

  beforeAll(async () => {
    fake = new FakeAdapter();
    flaky = new FakeAdapter();
    runtime = await startLocalRuntime({
      config: parseConfig({
        devMode: true,
        pools: [
          { name: 'fake', adapter: 'fake' },
          { name: 'flaky', adapter: 'fake' },
        ],
      }),
      adapters: { fake, flaky },
    });
    const org = await runtime.plane.tenancy.createOrg({ name: 'queues' });
    principal = orgPrincipal(org.id);
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  const sandbox = (id: string) => runtime.plane.sandboxes.get(principal, id);

  it.each([
    ['insufficient_capacity', errors.insufficientCapacity('node full'), 2, 0],
    ['sandbox_failed', errors.sandboxFailed('pod never ready'), 4, 1],
  ] as const)(
    '%s backs off by setting the message visibility to the backoff delay',
    async (_code, error, delaySeconds, attempts) => {
      fake.inject('create', { error });
      const { sandbox: created } = await runtime.plane.sandboxes.create(principal, {
        placement: { allowedPools: ['fake'] },
      });
      const waiting = await waitFor(
        () => sandbox(created.id),
        (s) => s.status === 'queued' && s.statusMessage !== null,
        'the first attempt to fail',
      );
      expect(waiting.attempts).toBe(attempts);
      expectVisibleWithin(created.id, delaySeconds);
      // The message comes back by itself and the next attempt succeeds; the pool stayed healthy.
      const running = await waitFor(
        () => sandbox(created.id),
        (s) => s.status === 'running',
        'running',
      );
      expect(running).toMatchObject({ attempts, pool: 'fake' });
    },
  );

  it('provider_unavailable backs off 4 s and marks the pool unhealthy for every container, in the store', async () => {
    flaky.inject('create', { error: errors.providerUnavailable('connection refused') });
    const { sandbox: created } = await runtime.plane.sandboxes.create(principal, {
      placement: { allowedPools: ['flaky'] },
    });
    const waiting = await waitFor(
      () => sandbox(created.id),
      (s) => s.status === 'queued' && s.statusMessage !== null,
      'the first attempt to fail',
    );
    expect(waiting.attempts).toBe(1);
    expectVisibleWithin(created.id, 4);
    // The provision container that saw the error wrote the mark; the operator's plane reads it from the store.
    const views = await runtime.plane.store.listPoolViews();
    expect(views.find((view) => view.pool === 'flaky')).toMatchObject({
      downReason: expect.stringContaining('connection refused'),
    });
    await runtime.plane.pools.sync(true);
    expect(runtime.plane.pools.health('flaky')).toEqual({
      healthy: false,
      reason: expect.stringContaining('connection refused'),
    });
    expect(runtime.plane.pools.isHealthy('fake')).toBe(true);
  });

  function expectVisibleWithin(sandboxId: string, delaySeconds: number): void {
    const inflight = runtime.sqs.inspect('provision').inflight.find((m) => m.body.includes(sandboxId));
    expect(inflight).toBeDefined();
    const remainingMs = (inflight?.visibilityDeadline ?? 0) - Date.now();
    // The queue's own visibility is 900 s: a deadline inside the backoff window proves it was changed.
    expect(remainingMs).toBeGreaterThan((delaySeconds - 1) * 1000);
    expect(remainingMs).toBeLessThanOrEqual(delaySeconds * 1000);
  }

  it('acknowledges duplicate deliveries: three messages, one instance', async () => {
    const { sandbox: created } = await runtime.plane.sandboxes.create(principal, {
      placement: { allowedPools: ['fake'] },
    });
    await waitFor(
      () => sandbox(created.id),
      (s) => s.status === 'running',
      'running',
    );
    const before = fake.calls.get('create') ?? 0;
    const instances = fake.instanceCount();
    for (let i = 0; i < 3; i++) {
      await runtime.plane.queue.send('provision', { sandboxId: created.id, orgId: created.orgId });
    }
    await waitFor(
      async () => runtime.sqs.inspect('provision'),
      (q) => ![...q.ready, ...q.inflight, ...q.delayed].some((m) => m.body.includes(created.id)),
      'the duplicates to be consumed',
    );
    expect(fake.calls.get('create') ?? 0).toBe(before);
    expect(fake.instanceCount()).toBe(instances);
  });

  it('recovers when the send after a committed write fails: the record is kept, queued', async () => {
    // Record first, message second: the API answers with the record even if SQS is unreachable.
    const unreachable = { ...runtime.plane.queue, send: async () => Promise.reject(new Error('SQS down')) };
    const { SandboxService } = await import('../../../lib/sandboxes/service.ts');
    const service = new SandboxService({ ...runtime.plane, queue: unreachable });
    const { sandbox: created } = await service.create(principal, {});
    expect(created.status).toBe('queued');
    expect((await sandbox(created.id)).status).toBe('queued');
  });
});

describe('dead-lettering on the embedded SQS server', () => {
  let runtime: LocalRuntime;

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      config: parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
      // A short visibility so a failed message comes back within the test, and a low receive limit.
      queues: { provision: { visibilityTimeoutSeconds: 1, maxReceiveCount: 2 } },
    });
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  it('dead-letters a malformed message after maxReceiveCount and keeps serving others', async () => {
    await runtime.sqs.client.send(
      new SendMessageCommand({ QueueUrl: runtime.sqs.urls.provision, MessageBody: 'this is not json' }),
    );
    const org = await runtime.plane.tenancy.createOrg({ name: 'dlq' });
    const principal = orgPrincipal(org.id);
    const { sandbox: created } = await runtime.plane.sandboxes.create(principal, {});
    await waitFor(
      () => runtime.plane.sandboxes.get(principal, created.id),
      (s) => s.status === 'running',
      'the healthy message to be served',
    );
    const dlq = await waitFor(
      async () => runtime.sqs.inspect('provision', true),
      (q) => q.ready.length > 0,
      'the malformed message in the DLQ',
    );
    expect(dlq.ready.map((m) => m.body)).toEqual(['this is not json']);
  });
});
