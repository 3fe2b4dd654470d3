import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import type { LocalRuntime } from '../../infra/local/runtime.ts';
import { sandboxSchema, updatedSandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

describe('PATCH /v1/sandboxes/{id}', () => {
  const fake = new FakeAdapter();
  let e: E2e;
  let runtime: LocalRuntime;
  let api: E2e['api'];
  let key: string;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: fake } } });
    ({ runtime, api, key } = e);
  });

  afterAll(async () => {
    await e?.stop();
  });

  const _get = (id: string, as?: string) => e.get(id, as);
  const runningOn = (pool: string) => e.running(pool, { labels: { a: '1' } });

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
