import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, inject, it } from 'vitest';
import { startLocalRuntime } from '../../../infra/local/runtime.ts';
import type { AuditEvent } from '../../../lib/audit/chain.ts';
import { parseConfig } from '../../../lib/config.ts';
import { EventBridgePublisher } from '../../../lib/events/eventbridge.ts';
import { type LifecycleEvent, lifecycleEventsOf, publishLifecycleEvents } from '../../../lib/events/port.ts';
import { quotaSchema } from '../../../lib/schemas/tenancy-parts.ts';
import { documentClient, localDynamoDbClient } from '../../../lib/store/dynamodb/client.ts';
import { type DynamoDbStore, dynamoDbStore } from '../../../lib/store/dynamodb/dynamodb-store.ts';
import { ensureTable } from '../../../lib/store/dynamodb/table.ts';
import { waitFor } from '../../helpers/http-client.ts';
import { sandboxRecord } from '../../helpers/records.ts';

describe.each(['memory', 'dynamodb'] as const)(
  'lifecycle events on the local runtime (%s store)',
  (storeKind) => {
    it('publishes every status change of a sandbox, in order, with org, project, pool and reason', async () => {
      const runtime = await startLocalRuntime({
        storeKind,
        dynamodbEndpoint: inject('dynamodbEndpoint'),
        config: parseConfig({ devMode: true, pools: [{ name: 'fake', adapter: 'fake' }] }),
        sweepIntervalSeconds: 0,
        reconcileIntervalSeconds: 0,
      });
      try {
        const org = await runtime.plane.tenancy.createOrg({ name: 'events' });
        const principal = {
          kind: 'org',
          orgId: org.id,
          keyId: 'key_x',
          role: 'member',
          projectId: 'prj_a',
        } as const;
        const { sandbox } = await runtime.plane.sandboxes.create(principal, {});
        await waitFor(
          () => runtime.plane.sandboxes.get(principal, sandbox.id),
          (s) => s.status === 'running',
          'running',
        );
        await runtime.plane.sandboxes.delete(principal, sandbox.id);
        await waitFor(
          () => runtime.plane.sandboxes.get(principal, sandbox.id),
          (s) => s.status === 'terminated',
          'terminated',
        );
        // Several containers link the org's outbox: an event may be published twice (at least once, as
        // docs/events.md says), so this reads them as a consumer does, de-duplicated on (orgId, seq).
        const mine = () => {
          const seen = new Set<number>();
          return runtime.events.filter((e) => {
            if (e.detail.sandboxId !== sandbox.id || seen.has(e.detail.seq)) return false;
            seen.add(e.detail.seq);
            return true;
          });
        };
        await waitFor(
          async () => mine().length,
          (n) => n >= 5,
          'five events',
        );
        expect(mine().map((e) => e.detailType)).toEqual([
          'differently.sandbox.queued',
          'differently.sandbox.provisioning',
          'differently.sandbox.running',
          'differently.sandbox.terminating',
          'differently.sandbox.terminated',
        ]);
        expect(mine()[2]?.detail).toMatchObject({
          orgId: org.id,
          projectId: 'prj_a',
          pool: 'fake',
          from: 'provisioning',
        });
        expect(mine()[3]?.detail.reason).toBe('termination requested');
      } finally {
        await runtime.stop();
      }
    });
  },
);

describe('at least once, never from a change that did not commit', () => {
  it('keeps events in the outbox while publishing fails, and publishes them with the next link', async () => {
    const base = localDynamoDbClient(inject('dynamodbEndpoint'));
    const tableName = `events-${process.pid}`;
    await ensureTable(base, tableName);
    const published: LifecycleEvent[] = [];
    let failing = true;
    const store = dynamoDbStore({
      client: documentClient(base),
      tableName,
      linkInline: false,
      onLinking: publishLifecycleEvents({
        async publish(events) {
          if (failing) throw new Error('EventBridge is down');
          published.push(...events);
        },
      }),
    });
    const other = 'org_01ARZ3NDEKTSV4RRFFQ69G5FAW';
    await store.createOrg(
      {
        id: other,
        name: 'e',
        quota: quotaSchema.parse({}),
        idlePolicy: null,
        networkPolicy: null,
        budget: null,
        createdAt: new Date().toISOString(),
      },
      { actor: 'admin', action: 'org.created', target: other, details: {} },
    );
    // A sandbox status change (its creation: queued) recorded through the outbox.
    const sandbox = sandboxRecord(other, { resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 } });
    await store.createSandbox(sandbox, {
      actor: 'k',
      action: 'sandbox.created',
      target: sandbox.id,
      details: {},
    });
    await expect(store.linkAudit(other)).rejects.toThrow('EventBridge is down');
    expect(await store.outboxSize(other)).toBe(2);
    expect(published).toEqual([]);
    failing = false;
    await store.linkAudit(other);
    expect(await store.outboxSize(other)).toBe(0);
    expect(published.map((e) => [e.detailType, e.detail.sandboxId])).toEqual([
      ['differently.sandbox.queued', sandbox.id],
    ]);
    base.destroy();
  });

  it('publishes each change under its committed sequence number, whichever of several linkers publishes it', async () => {
    const base = localDynamoDbClient(inject('dynamodbEndpoint'));
    const tableName = `events-linkers-${process.pid}`;
    await ensureTable(base, tableName);
    const published: LifecycleEvent[] = [];
    // Four containers' stores on one table, each linking (and publishing) on its own.
    const stores = Array.from({ length: 4 }, () =>
      dynamoDbStore({
        client: documentClient(base),
        tableName,
        onLinking: publishLifecycleEvents({
          async publish(events) {
            published.push(...events);
          },
        }),
      }),
    );
    const orgId = 'org_01ARZ3NDEKTSV4RRFFQ69G5FAX';
    await stores[0]?.createOrg(
      {
        id: orgId,
        name: 'linkers',
        quota: quotaSchema.parse({ maxSandboxes: 1000 }),
        idlePolicy: null,
        networkPolicy: null,
        budget: null,
        createdAt: new Date().toISOString(),
      },
      { actor: 'admin', action: 'org.created', target: orgId, details: {} },
    );
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const store = stores[i % stores.length] as DynamoDbStore;
        const sandbox = sandboxRecord(orgId, { resources: { cpu: 0.25, memoryMiB: 128, diskGiB: 1 } });
        await store.createSandbox(sandbox, {
          actor: 'k',
          action: 'sandbox.created',
          target: sandbox.id,
          details: {},
        });
        await store.linkAudit(orgId);
      }),
    );
    await Promise.all(stores.map((store) => store.linkAudit(orgId)));
    const chain = new Map<number, string>();
    let cursor: string | undefined;
    do {
      const page = await (stores[0] as DynamoDbStore).listAudit(orgId, { cursor, limit: 100 });
      for (const event of page.items) chain.set(event.seq, event.target);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    expect(published.length).toBeGreaterThanOrEqual(40);
    // Duplicates may happen (at least once), but every publication names the change its seq committed.
    for (const event of published)
      expect(chain.get(event.detail.seq), String(event.detail.seq)).toBe(event.detail.sandboxId);
    expect(new Set(published.map((event) => event.detail.sandboxId)).size).toBe(40);
    base.destroy();
  });

  it('derives events only from sandbox status actions', () => {
    const event = (action: string, details: Record<string, unknown> = {}): AuditEvent => ({
      orgId: 'org_1',
      seq: 1,
      at: '2026-01-01T00:00:00.000Z',
      actor: 'system',
      action,
      target: 'sbx_1',
      details,
      prevHash: '',
      hash: '',
    });
    const events = lifecycleEventsOf([
      event('org.created'),
      event('key.revoked'),
      event('sandbox.updated'),
      event('sandbox.running', { from: 'provisioning', pool: 'p', projectId: null }),
    ]);
    expect(events).toEqual([
      {
        detailType: 'differently.sandbox.running',
        detail: {
          sandboxId: 'sbx_1',
          orgId: 'org_1',
          projectId: null,
          pool: 'p',
          status: 'running',
          from: 'provisioning',
          reason: null,
          cause: 'user',
          at: '2026-01-01T00:00:00.000Z',
          seq: 1,
        },
      },
    ]);
  });

  it('carries the cause a transition recorded, and user for a caller or one it does not know', () => {
    const event = (details: Record<string, unknown>): AuditEvent => ({
      orgId: 'org_1',
      seq: 1,
      at: '2026-01-01T00:00:00.000Z',
      actor: 'system',
      action: 'sandbox.terminating',
      target: 'sbx_1',
      details,
      prevHash: '',
      hash: '',
    });
    const causes = lifecycleEventsOf([
      event({ cause: 'ttl' }),
      event({ cause: 'idle' }),
      event({}),
      event({ cause: 'mystery' }),
    ]).map((each) => each.detail.cause);
    expect(causes).toEqual(['ttl', 'idle', 'user', 'user']);
  });
});

describe('EventBridgePublisher', () => {
  const client = new EventBridgeClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const mock = mockClient(client);
  const sample = (i: number): LifecycleEvent => ({
    detailType: 'differently.sandbox.running',
    detail: {
      sandboxId: `sbx_${i}`,
      orgId: 'org_1',
      projectId: null,
      pool: 'p',
      status: 'running',
      from: null,
      reason: null,
      cause: 'user',
      at: '2026-01-01T00:00:00.000Z',
      seq: i,
    },
  });

  it('sends at most 10 entries per call to the named bus', async () => {
    mock.reset();
    mock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [] });
    await new EventBridgePublisher(client, 'differently').publish(
      Array.from({ length: 23 }, (_, i) => sample(i)),
    );
    const calls = mock.commandCalls(PutEventsCommand);
    expect(calls.map((c) => c.args[0].input.Entries?.length)).toEqual([10, 10, 3]);
    expect(calls[0]?.args[0].input.Entries?.[0]).toMatchObject({
      EventBusName: 'differently',
      Source: 'differently',
      DetailType: 'differently.sandbox.running',
    });
  });

  it('fails when EventBridge refuses any entry, so the batch is published again later', async () => {
    mock.reset();
    mock
      .on(PutEventsCommand)
      .resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'x' }] });
    await expect(new EventBridgePublisher(client, 'differently').publish([sample(1)])).rejects.toThrow(
      /refused 1/,
    );
  });
});
