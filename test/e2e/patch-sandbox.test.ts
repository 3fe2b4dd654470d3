import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { sandboxSchema, updatedSandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { client, expectError, waitFor } from '../helpers/http-client.ts';

describe('PATCH /v1/sandboxes/{id}', () => {
  let runtime: LocalRuntime;
  let root: string;
  let api: ReturnType<typeof client>;
  let key: string;
  const fake = new FakeAdapter();

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'patch-devhost-'));
    runtime = await startLocalRuntime({
      config: parseConfig({
        devMode: true,
        pools: [
          { name: 'local', adapter: 'devhost', config: { root } },
          { name: 'fake', adapter: 'fake' },
        ],
      }),
      adapters: { fake },
      sweepIntervalSeconds: 0,
      reconcileIntervalSeconds: 0,
    });
    api = client(runtime.url);
    const org = z
      .object({ id: z.string() })
      .parse((await api.post('/v1/admin/orgs', runtime.adminKey, { name: 'p' })).body);
    key = z
      .object({ key: z.string() })
      .parse((await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 'k' })).body).key;
  });

  afterAll(async () => {
    await runtime?.stop();
    await rm(root, { recursive: true, force: true });
  });

  async function runningOn(pool: string) {
    const created = sandboxSchema.parse(
      (await api.post('/v1/sandboxes', key, { placement: { allowedPools: [pool] }, labels: { a: '1' } }))
        .body,
    );
    return waitFor(
      async () => sandboxSchema.parse((await api.get(`/v1/sandboxes/${created.id}`, key)).body),
      (s) => s.status === 'running',
      'running',
    );
  }

  const patch = (id: string, body: unknown) =>
    fetch(`${runtime.url}/v1/sandboxes/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown, text: '' }));

  it('resets expiresAt from now and moves the provider-side lifetime where the adapter can', async () => {
    const sandbox = await runningOn('fake');
    const before = Date.now();
    const reply = await patch(sandbox.id, { ttlSeconds: 7200 });
    expect(reply.status).toBe(200);
    const updated = updatedSandboxSchema.parse(reply.body);
    expect(updated.ttlSeconds).toBe(7200);
    const expires = Date.parse(updated.expiresAt ?? '');
    expect(expires).toBeGreaterThanOrEqual(before + 7200 * 1000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 7200 * 1000);
    expect(updated.providerTtl).toEqual({ extended: true, note: 'the backend lifetime was moved too' });
    const record = await runtime.plane.store.getSandbox(updated.orgId, updated.id);
    expect(fake.backstops.get(record?.backendRef ?? '')).toBe(7200);
  });

  it('says so where the backend’s lifetime cannot move', async () => {
    const sandbox = await runningOn('local');
    const updated = updatedSandboxSchema.parse((await patch(sandbox.id, { ttlSeconds: 600 })).body);
    expect(updated.providerTtl?.extended).toBe(false);
    expect(updated.providerTtl?.note).toContain('devhost');
  });

  it('replaces labels, refuses reserved ones, and refuses a TTL change on a terminated sandbox', async () => {
    const sandbox = await runningOn('fake');
    const relabelled = updatedSandboxSchema.parse((await patch(sandbox.id, { labels: { b: '2' } })).body);
    expect(relabelled.labels).toEqual({ b: '2' });
    expect(relabelled.providerTtl).toBeUndefined();
    expectError(await patch(sandbox.id, { labels: { 'differently.dev/org': 'x' } }), 400, 'invalid_request');
    expectError(await patch(sandbox.id, {}), 400, 'invalid_request');
    expectError(await patch(sandbox.id, { ttlSeconds: 10 }), 400, 'invalid_request');
    await api.delete(`/v1/sandboxes/${sandbox.id}`, key);
    await waitFor(
      async () => sandboxSchema.parse((await api.get(`/v1/sandboxes/${sandbox.id}`, key)).body),
      (s) => s.status === 'terminated',
      'terminated',
    );
    const refused = expectError(await patch(sandbox.id, { ttlSeconds: 600 }), 409, 'invalid_state');
    expect(refused.error.details).toEqual({ status: 'terminated' });
  });
});
