import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { webhookDeliverySchema, webhookDeliveryStatusSchema } from '../../lib/schemas/webhooks.ts';
import { verifyDelivery } from '../../lib/webhooks/signature.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

/** What the test's endpoint received, one entry per request. */
interface Received {
  path: string;
  body: string;
  signature: string | undefined;
  deliveryId: string | undefined;
  event: string | undefined;
}

/** An endpoint on 127.0.0.1 (dev mode lets deliveries reach loopback): it answers what `answer` says. */
async function receiver(answer: (received: Received, index: number) => number) {
  const received: Received[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = {
        path: request.url ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
        signature: request.headers['differently-signature'] as string | undefined,
        deliveryId: request.headers['differently-delivery'] as string | undefined,
        event: request.headers['differently-event'] as string | undefined,
      };
      received.push(entry);
      response.statusCode = answer(entry, received.length - 1);
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    at: (path: string) => received.filter((entry) => entry.path === path),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const created = z.object({ id: z.string(), secret: z.string(), url: z.string() });

describe.each(['memory', 'dynamodb'] as const)('tenant webhooks (%s store)', (store) => {
  let e: E2e;
  let orgId: string;
  let endpoint: Awaited<ReturnType<typeof receiver>>;
  const failOnce = new Set<string>();

  beforeAll(async () => {
    e = await startE2e({
      fakes: { fake2: { adapter: new FakeAdapter() } },
      // Dead letters after the second failed attempt, so the test sees one within seconds.
      queues: { webhooks: { maxReceiveCount: 2 } },
      ...(store === 'dynamodb' && { dynamodbEndpoint: inject('dynamodbEndpoint') }),
    });
    orgId = z.object({ orgId: z.string() }).parse((await e.api.get('/v1/usage', e.key)).body).orgId;
    endpoint = await receiver((entry) => {
      if (entry.path === '/down') return 500;
      // Each delivery of /flaky fails the first time it is sent, then succeeds.
      if (entry.path === '/flaky' && entry.deliveryId !== undefined && !failOnce.has(entry.deliveryId)) {
        failOnce.add(entry.deliveryId);
        return 503;
      }
      return 204;
    });
  });

  afterAll(async () => {
    await e?.stop();
    await endpoint?.close();
  });

  const register = async (path: string, extra: Record<string, unknown> = {}) => {
    const answer = await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, {
      url: endpoint.url(path),
      ...extra,
    });
    expect(answer.status, answer.text).toBe(201);
    return created.parse(answer.body);
  };
  const unregister = (id: string) =>
    e.api.delete(`/v1/admin/orgs/${orgId}/webhooks/${id}`, e.runtime.adminKey);
  const deliveryPage = z.object({
    items: z.array(webhookDeliveryStatusSchema),
    nextCursor: z.nullable(z.string()),
  });
  const deliveryRecords = async (webhookId: string) => {
    const answer = await e.api.get(
      `/v1/admin/orgs/${orgId}/webhooks/${webhookId}/deliveries`,
      e.runtime.adminKey,
    );
    expect(answer.status, answer.text).toBe(200);
    return deliveryPage.parse(answer.body);
  };
  const deliveriesAt = (path: string, sandboxId: string) =>
    endpoint
      .at(path)
      .map((entry) => ({ ...entry, delivery: webhookDeliverySchema.parse(JSON.parse(entry.body)) }))
      .filter((entry) => entry.delivery.data.sandboxId === sandboxId);

  it('delivers every lifecycle event, signed over its timestamp and body, with its cause and an id for de-duplication', async () => {
    const hook = await register('/all');
    expect(hook.secret).toMatch(/^whsec_/);
    const listed = z
      .object({ items: z.array(z.record(z.string(), z.unknown())) })
      .parse((await e.api.get(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey)).body);
    expect(listed.items.map((item) => item.id)).toContain(hook.id);
    expect(JSON.stringify(listed)).not.toContain(hook.secret);

    const sandbox = await e.running('fake2');
    await e.destroy(sandbox.id);
    const got = await waitFor(
      async () => deliveriesAt('/all', sandbox.id),
      (list) => list.some((entry) => entry.delivery.type === 'sandbox.terminated'),
      'the terminated delivery',
    );
    expect(got.map((entry) => entry.delivery.type)).toEqual(
      expect.arrayContaining([
        'sandbox.queued',
        'sandbox.provisioning',
        'sandbox.running',
        'sandbox.terminating',
        'sandbox.terminated',
      ]),
    );
    for (const entry of got) {
      expect(verifyDelivery(hook.secret, entry.signature, entry.body)).toBe(true);
      expect(verifyDelivery('whsec_someone-else', entry.signature, entry.body)).toBe(false);
      expect(verifyDelivery(hook.secret, entry.signature, `${entry.body} `)).toBe(false);
      expect(entry.deliveryId).toBe(entry.delivery.id);
      expect(entry.event).toBe(entry.delivery.type);
      expect(entry.delivery.data).toMatchObject({ orgId, sandboxId: sandbox.id, cause: 'user' });
    }
    expect(new Set(got.map((entry) => entry.delivery.id)).size).toBe(got.length);
    expect((await unregister(hook.id)).status).toBe(200);
  });

  it('tries again after a failed delivery, with the same id; only subscribed events are sent', async () => {
    const hook = await register('/flaky', { events: ['sandbox.running'] });
    const sandbox = await e.running('fake2');
    const got = await waitFor(
      async () => deliveriesAt('/flaky', sandbox.id),
      (list) => list.length >= 2,
      'a failed delivery and its retry',
    );
    expect(got.map((entry) => entry.delivery.type)).toEqual(['sandbox.running', 'sandbox.running']);
    expect(got[0]?.delivery.id).toBe(got[1]?.delivery.id);
    // Its record, for the org's admin: two attempts, the last answered 204, delivered.
    const record = await waitFor(
      async () => deliveryRecords(hook.id),
      (page) => page.items.some((item) => item.sandboxId === sandbox.id && item.deliveredAt !== null),
      'the delivery recorded as delivered',
    );
    expect(record.items.find((item) => item.sandboxId === sandbox.id)).toMatchObject({
      id: got[0]?.delivery.id,
      webhookId: hook.id,
      type: 'sandbox.running',
      attempts: 2,
      lastStatus: 204,
      lastError: null,
    });
    await unregister(hook.id);
    await e.destroy(sandbox.id);
  });

  it('moves a delivery its endpoint keeps refusing to the dead-letter queue', async () => {
    const hook = await register('/down', { events: ['sandbox.running'] });
    const sandbox = await e.running('fake2');
    const dead = await waitFor(
      async () => e.runtime.sqs.inspect('webhooks', true).ready.map((message) => message.body),
      (bodies) => bodies.some((body) => body.includes(sandbox.id)),
      'the delivery in the webhooks DLQ',
      60_000,
    );
    expect(dead.find((body) => body.includes(sandbox.id))).toContain(hook.id);
    expect(deliveriesAt('/down', sandbox.id)).toHaveLength(2);
    const record = (await deliveryRecords(hook.id)).items.find((item) => item.sandboxId === sandbox.id);
    expect(record).toMatchObject({ attempts: 2, lastStatus: 500, lastError: null, deliveredAt: null });
    // An endpoint that does not answer at all: the reason is said, with nothing of its URL.
    const refused = await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, {
      url: 'http://127.0.0.1:1/never',
      events: ['sandbox.running'],
    });
    expect(refused.status, refused.text).toBe(201);
    const refusedHook = created.parse(refused.body);
    const other = await e.running('fake2');
    const failed = await waitFor(
      async () => (await deliveryRecords(refusedHook.id)).items.find((item) => item.sandboxId === other.id),
      (item) => item !== undefined,
      'the refused delivery recorded',
    );
    expect(failed).toMatchObject({
      lastStatus: null,
      lastError: 'could not connect (ECONNREFUSED)',
      deliveredAt: null,
    });
    await unregister(refusedHook.id);
    await e.destroy(other.id);
    await unregister(hook.id);
    await e.destroy(sandbox.id);
  });

  it('signs with both secrets after a rotation, so a receiver with either accepts it', async () => {
    const hook = await register('/rotated', { events: ['sandbox.running'] });
    const rotated = await e.api.post(
      `/v1/admin/orgs/${orgId}/webhooks/${hook.id}/rotate-secret`,
      e.runtime.adminKey,
      {},
    );
    expect(rotated.status, rotated.text).toBe(200);
    const next = z.object({ secret: z.string(), previousSecretValidUntil: z.string() }).parse(rotated.body);
    expect(next.secret).not.toBe(hook.secret);
    const sandbox = await e.running('fake2');
    const [entry] = await waitFor(
      async () => deliveriesAt('/rotated', sandbox.id),
      (list) => list.length >= 1,
      'a delivery after the rotation',
    );
    expect(verifyDelivery(next.secret, entry?.signature, entry?.body ?? '')).toBe(true);
    expect(verifyDelivery(hook.secret, entry?.signature, entry?.body ?? '')).toBe(true);
    await unregister(hook.id);
    await e.destroy(sandbox.id);
  });

  it('tells the idle policy as the cause of an idle pause', async () => {
    const hook = await register('/idle', { events: ['sandbox.paused'] });
    const sandbox = sandboxSchema.parse(
      (
        await e.api.post('/v1/sandboxes', e.key, {
          placement: { allowedPools: ['fake2'] },
          idle: { afterSeconds: 1 },
        })
      ).body,
    );
    const [entry] = await waitFor(
      async () => deliveriesAt('/idle', sandbox.id),
      (list) => list.length >= 1,
      'the idle pause delivery',
      60_000,
    );
    expect(entry?.delivery.data).toMatchObject({ status: 'paused', cause: 'idle' });
    await unregister(hook.id);
    await e.destroy(sandbox.id);
  });

  it('refuses what is not an endpoint, and an org past its endpoints; another org sees none of them', async () => {
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, {
        url: 'ftp://example.com/x',
      }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, { url: 'not a url' }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, {
        url: endpoint.url('/x'),
        events: ['sandbox.exploded'],
      }),
      400,
      'invalid_request',
    );
    const hooks = [];
    for (let i = 0; i < 10; i++) hooks.push(await register(`/many-${i}`));
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/webhooks`, e.runtime.adminKey, {
        url: endpoint.url('/one-more'),
      }),
      429,
      'quota_exceeded',
    );
    const other = z
      .object({ id: z.string() })
      .parse((await e.api.post('/v1/admin/orgs', e.runtime.adminKey, { name: 'other' })).body);
    const theirs = z
      .object({ items: z.array(z.unknown()) })
      .parse((await e.api.get(`/v1/admin/orgs/${other.id}/webhooks`, e.runtime.adminKey)).body);
    expect(theirs.items).toEqual([]);
    // Nor their deliveries: an endpoint is found under its own org only.
    expectError(
      await e.api.get(`/v1/admin/orgs/${other.id}/webhooks/${hooks[0]?.id}/deliveries`, e.runtime.adminKey),
      404,
      'not_found',
    );
    expectError(await unregister('whk_01ARZ3NDEKTSV4RRFFQ69G5FAV'), 404, 'not_found');
    for (const hook of hooks) await unregister(hook.id);
  });
});
