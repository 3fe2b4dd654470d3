import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { startLocalRuntime } from '../../../infra/local/runtime.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { silentLog } from '../../../lib/log.ts';
import type { DeadLetter, DeadLetterSource, QueueName } from '../../../lib/queue/port.ts';
import { transitionSandbox } from '../../../lib/sandboxes/transition.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { sweep } from '../../../lib/scheduler/sweep.ts';
import type { DynamoDbStore } from '../../../lib/store/dynamodb/dynamodb-store.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';
import { waitFor } from '../../helpers/http-client.ts';
import { RecordingQueue } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';
import { storeFactories } from '../../helpers/stores.ts';

class FakeDeadLetters implements DeadLetterSource {
  readonly letters: Record<QueueName, { body: string; acked: boolean }[]> = {
    provision: [],
    terminate: [],
    operations: [],
    webhooks: [],
  };
  async receive(queue: QueueName): Promise<DeadLetter[]> {
    const pending = this.letters[queue].filter((l) => !l.acked);
    this.letters[queue] = pending;
    return pending.splice(0, 10).map((letter) => ({
      body: letter.body,
      receiveCount: 100,
      ack: async () => {
        letter.acked = true;
        this.letters[queue] = this.letters[queue].filter((l) => l !== letter);
      },
    }));
  }
}

/**
 * DynamoDB Local is the integration project's (its global setup): outside it (`npm run mutate`, which
 * runs this file against mutants of the sweep) the memory store's variant runs alone.
 */
const withServices = inject('dynamodbEndpoint') !== undefined;

const stores: Record<string, () => Promise<Store>> = {
  memory: () => storeFactories.memory(),
  ...(withServices && { dynamodb: () => storeFactories.dynamodb({ linkInline: false }) }),
};

async function setup(kind: string) {
  let clock = Date.parse('2026-12-01T00:00:00.000Z');
  const now = () => new Date(clock);
  const store = await (stores[kind] ?? stores.memory)?.();
  if (store === undefined) throw new Error('no store');
  const fake = new FakeAdapter();
  const queue = new RecordingQueue();
  const deadLetters = new FakeDeadLetters();
  const config = parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] });
  const plane = createControlPlane({
    config,
    store,
    queue,
    deadLetters,
    pools: await buildPools(config, { log: silentLog, adapters: { fake } }),
    log: silentLog,
    adminKey: 'k',
    now,
  });
  const org = await plane.tenancy.createOrg({ name: 'sweep' });
  const principal: Extract<Principal, { kind: 'org' }> = orgPrincipal(org.id);
  const running = async (ttlSeconds = 60) => {
    const { sandbox } = await plane.sandboxes.create(principal, { ttlSeconds });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: org.id });
    const record = await store.getSandbox(org.id, sandbox.id);
    if (record?.status !== 'running') throw new Error('not running');
    return record;
  };
  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };
  return { plane, store, fake, queue, deadLetters, org, principal, running, advance, now };
}

describe.each(Object.keys(stores))('sweep (%s store)', (kind) => {
  it('terminates running, stopped and paused sandboxes past their TTL and leaves others alone', async () => {
    const { plane, store, queue, org, running, advance, now } = await setup(kind);
    const kept = await running(3600);
    const active = await running();
    const stopped = await transitionSandbox(
      store,
      await running(),
      'stopped',
      {},
      { now: now(), actor: 'test' },
    );
    const paused = await transitionSandbox(
      store,
      await running(),
      'paused',
      {},
      { now: now(), actor: 'test' },
    );
    advance(59);
    expect((await sweep(plane)).expired).toBe(0);
    advance(2);
    queue.sent.length = 0;
    const report = await sweep(plane);
    expect(report.expired).toBe(3);
    for (const id of [active.id, stopped.id, paused.id]) {
      const record = await store.getSandbox(org.id, id);
      expect(record?.status).toBe('terminating');
      expect(record?.statusMessage).toMatch(/^expired: its TTL of 60 s ended/);
    }
    expect(queue.sent.map((m) => m.queue)).toEqual(['terminate', 'terminate', 'terminate']);
    expect((await store.getSandbox(org.id, kept.id))?.status).toBe('running');
    expect((await store.getUsage(org.id)).sandboxes).toBe(1);
    expect((await sweep(plane)).expired).toBe(0);
  });

  it('recovers a lost provision message, and does not duplicate a live one', async () => {
    const { plane, store, queue, org, principal, advance } = await setup(kind);
    queue.failSends = true;
    const { sandbox: lost } = await plane.sandboxes.create(principal, {});
    queue.failSends = false;
    advance(200);
    const { sandbox: fresh } = await plane.sandboxes.create(principal, {});
    advance(101);
    queue.sent.length = 0;
    expect((await sweep(plane)).requeuedProvisions).toBe(1);
    expect(queue.sent).toEqual([{ queue: 'provision', message: { sandboxId: lost.id, orgId: org.id } }]);
    await provisionSandbox(plane, { sandboxId: lost.id, orgId: org.id });
    expect((await store.getSandbox(org.id, lost.id))?.status).toBe('running');
    expect((await store.getSandbox(org.id, fresh.id))?.status).toBe('queued');
    // The requeued one was touched: the next pass does not send it again.
    queue.sent.length = 0;
    advance(30);
    await sweep(plane);
    expect(queue.sent.filter((m) => m.message.sandboxId === lost.id)).toEqual([]);
  });

  it('requeues a stuck termination', async () => {
    const { plane, queue, org, principal, running, advance } = await setup(kind);
    const sandbox = await running(3600);
    queue.failSends = true;
    await plane.sandboxes.delete(principal, sandbox.id);
    queue.failSends = false;
    advance(599);
    expect((await sweep(plane)).requeuedTerminations).toBe(0);
    advance(2);
    queue.sent.length = 0;
    expect((await sweep(plane)).requeuedTerminations).toBe(1);
    expect(queue.sent).toEqual([{ queue: 'terminate', message: { sandboxId: sandbox.id, orgId: org.id } }]);
  });

  it('fails sandboxes whose provision message was dead-lettered, releasing what they held', async () => {
    const { plane, store, deadLetters, org, principal, queue } = await setup(kind);
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const record = await store.getSandbox(org.id, sandbox.id);
    if (record === undefined) throw new Error('missing');
    await transitionSandbox(
      store,
      record,
      'provisioning',
      { pool: 'fake' },
      { now: new Date(), actor: 'test' },
    );
    expect((await store.getUsage(org.id)).sandboxes).toBe(1);
    deadLetters.letters.provision.push(
      { body: JSON.stringify({ sandboxId: sandbox.id, orgId: org.id }), acked: false },
      { body: 'garbage', acked: false },
    );
    deadLetters.letters.terminate.push({
      body: JSON.stringify({ sandboxId: sandbox.id, orgId: org.id }),
      acked: false,
    });
    queue.sent.length = 0;
    const report = await sweep(plane);
    expect(report.deadLetteredProvisions).toBe(1);
    const failed = await store.getSandbox(org.id, sandbox.id);
    expect(failed?.status).toBe('failed');
    expect(failed?.statusMessage).toMatch(/dead-lettered after 100 receives/);
    expect(await store.getUsage(org.id)).toMatchObject({ sandboxes: 0, cpu: 0 });
    expect(deadLetters.letters.provision).toEqual([]);
    // The terminate letter was for a sandbox not terminating: acknowledged, nothing re-sent.
    expect(deadLetters.letters.terminate).toEqual([]);
    expect(queue.sent).toEqual([]);
  });
});

describe.skipIf(!withServices)('sweep (dynamodb store, outbox)', () => {
  it('links audit records left in the outbox', async () => {
    const { plane, store, org, running } = await setup('dynamodb');
    await running();
    const pending = async () => {
      const dynamo = store as DynamoDbStore;
      return dynamo.outboxSize(org.id);
    };
    expect(await pending()).toBe(4);
    await sweep(plane);
    expect(await pending()).toBe(0);
    const events = (await store.listAudit(org.id, { limit: 100 })).items;
    expect(events.map((e) => e.action)).toEqual([
      'org.created',
      'sandbox.created',
      'sandbox.provisioning',
      'sandbox.running',
    ]);
  });
});

describe.skipIf(!withServices)('the local runtime runs the sweep on its timer', () => {
  it('drains a dead-lettered message within a few intervals', async () => {
    const runtime = await startLocalRuntime({
      config: parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
      sweepIntervalSeconds: 1,
    });
    try {
      await runtime.sqs.client.send(
        new SendMessageCommand({ QueueUrl: runtime.sqs.dlqUrls.provision, MessageBody: 'poison' }),
      );
      expect(runtime.sqs.inspect('provision', true).ready.length).toBe(1);
      await waitFor(
        async () => runtime.sqs.inspect('provision', true),
        (q) => q.ready.length + q.inflight.length === 0,
        'the sweep to drain the DLQ',
      );
    } finally {
      await runtime.stop();
    }
  });
});
