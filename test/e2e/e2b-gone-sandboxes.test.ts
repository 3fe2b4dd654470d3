import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { orgKey } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * E2B knows no terminated or failed sandboxes: every control call on one answers 404 in E2B's shape, as
 * for an id that never existed, and the list leaves them out. Sandboxes made through /v1 on a fake pool
 * (one terminated, one whose Create the backend refused), then asked about through /e2b by the same org.
 */
describe('the E2B facade and sandboxes that are gone', () => {
  let e: E2e;
  let e2bKey: string;
  let key: string;
  const backend = new FakeAdapter();

  beforeAll(async () => {
    e = await startE2e({ fakes: { gone: { adapter: backend } } });
    ({ e2bApiKey: e2bKey, key } = await orgKey(e.runtime, 'e2b-gone'));
  });

  afterAll(async () => {
    await e?.stop();
  });

  const e2b = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${e.runtime.url}/e2b${path}`, {
      method,
      headers: { 'x-api-key': e2bKey, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json().catch(() => null)) as unknown };
  };
  const create = async () =>
    sandboxSchema.parse(
      (await e.api.post('/v1/sandboxes', key, { placement: { allowedPools: ['gone'] } })).body,
    );

  it('answers 404 to every control call on a terminated or a failed sandbox, and lists neither', async () => {
    const ended = await create();
    await e.until(ended.id, 'running', key);
    await e.api.delete(`/v1/sandboxes/${ended.id}`, key);
    expect((await e.until(ended.id, 'terminated', key)).status).toBe('terminated');

    backend.inject('create', { error: adapterErrors.invalidRequest('this template cannot be built') });
    const broken = await create();
    expect((await e.until(broken.id, 'failed', key)).status).toBe('failed');

    const live = await create();
    await e.until(live.id, 'running', key);
    // The reference: the same calls on a running sandbox of the same org succeed.
    expect((await e2b('GET', `/sandboxes/${live.id}`)).status).toBe(200);

    for (const id of [ended.id, broken.id, 'sbx_never_existed']) {
      for (const [method, path, body] of [
        ['GET', `/sandboxes/${id}`],
        ['DELETE', `/sandboxes/${id}`],
        ['POST', `/sandboxes/${id}/timeout`, { timeout: 300 }],
        ['POST', `/sandboxes/${id}/pause`],
        ['POST', `/sandboxes/${id}/connect`, { timeout: 300 }],
        ['GET', `/sandboxes/${id}/metrics`],
      ] as const) {
        const answer = await e2b(method, path, body);
        expect(answer, `${method} ${path}`).toMatchObject({ status: 404, body: { code: 404 } });
      }
    }
    const listed = await e2b('GET', '/v2/sandboxes');
    expect(listed.status).toBe(200);
    const ids = (listed.body as { sandboxID: string }[]).map((sandbox) => sandbox.sandboxID);
    expect(ids).toEqual([live.id]);
    // Nothing the calls did brought either back.
    expect((await e.get(ended.id, key)).status).toBe('terminated');
    expect((await e.get(broken.id, key)).status).toBe('failed');
    await e.api.delete(`/v1/sandboxes/${live.id}`, key);
  });
});
