import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { client } from '../helpers/http-client.ts';
import { startValidatingProxy, type ValidatingProxy } from '../helpers/validating-proxy.ts';

/**
 * docs/openapi.json is the contract: scripted calls to every kind of route, good and bad, go through a
 * validating gateway (as Prism's proxy would be put in front of the API), and every request content type,
 * status, answer content type and body must be one the document declares. The README sessions go through
 * the same gateway (readme-cli-session.test.ts).
 */
describe('the OpenAPI document, held to what the API answers', () => {
  let e2e: E2e;
  let gateway: ValidatingProxy;
  let api: ReturnType<typeof client>;
  let admin: string;
  let orgId: string;

  beforeAll(async () => {
    e2e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    gateway = await startValidatingProxy(e2e.runtime.url);
    api = client(gateway.url);
    admin = e2e.runtime.adminKey;
    orgId = ((await api.post('/v1/admin/orgs', admin, { name: 'contract' })).body as { id: string }).id;
  });
  afterAll(async () => {
    await gateway?.close();
    await e2e?.stop();
  });

  const raw = (path: string, init: RequestInit) =>
    fetch(`${gateway.url}${path}`, init).then((r) => r.text().then(() => r));

  it('declares every answer of the public, admin and tenant routes, refusals included', async () => {
    const key = e2e.key;
    // Public
    expect((await api.get('/v1/health')).status).toBe(200);
    expect((await api.get('/v1/openapi.json')).status).toBe(200);
    // No key, a key that is not one, the wrong kind of key.
    expect((await api.get('/v1/sandboxes')).status).toBe(401);
    const bad = await raw('/v1/sandboxes', { headers: { authorization: 'Bearer key_nope.nope' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="differently", error="invalid_token"/);
    expect((await api.get('/v1/admin/orgs', key)).status).toBe(403);
    expect((await api.get('/v1/sandboxes', admin)).status).toBe(403);
    // Admin routes
    expect((await api.get('/v1/admin/orgs', admin)).status).toBe(200);
    expect((await api.get(`/v1/admin/orgs/${orgId}`, admin)).status).toBe(200);
    expect((await api.get('/v1/admin/orgs/org_00000000000000000000000000', admin)).status).toBe(404);
    expect((await api.post('/v1/admin/orgs', admin, { name: '' })).status).toBe(400);
    const created = await api.post(`/v1/admin/orgs/${orgId}/keys`, admin, { name: 'k' });
    expect(created.status).toBe(201);
    const keyId = (created.body as { id: string }).id;
    expect((await api.get(`/v1/admin/orgs/${orgId}/keys`, admin)).status).toBe(200);
    expect((await api.post(`/v1/admin/keys/${keyId}/rotate`, admin)).status).toBe(201);
    expect((await api.post(`/v1/admin/keys/${keyId}/rotate`, admin)).status).toBe(409);
    expect((await api.delete(`/v1/admin/keys/${keyId}`, admin)).status).toBe(200);
    expect((await api.post(`/v1/admin/orgs/${orgId}/projects`, admin, { name: 'p' })).status).toBe(201);
    expect((await api.get(`/v1/admin/orgs/${orgId}/projects`, admin)).status).toBe(200);
    expect((await api.put(`/v1/admin/orgs/${orgId}/quota`, admin, { maxSandboxes: 5 })).status).toBe(200);
    expect((await api.put(`/v1/admin/orgs/${orgId}/quota`, admin, {})).status).toBe(400);
    expect((await api.get('/v1/admin/pools', admin)).status).toBe(200);
    expect((await api.get('/v1/admin/pools/local', admin)).status).toBe(200);
    expect((await api.get('/v1/admin/pools/nope', admin)).status).toBe(404);
    expect((await api.get('/v1/admin/policy', admin)).status).toBe(200);
    expect((await api.post('/v1/admin/reconcile', admin)).status).toBe(200);
    expect((await api.get(`/v1/admin/audit/verify?orgId=${orgId}`, admin)).status).toBe(200);
    // Tenant routes
    expect((await api.get('/v1/usage', key)).status).toBe(200);
    expect((await api.get('/v1/templates', key)).status).toBe(200);
    expect((await api.get('/v1/trust', key)).status).toBe(200);
    expect((await api.get('/v1/audit', key)).status).toBe(200);
    expect((await api.get('/v1/sandboxes?limit=0', key)).status).toBe(400);
    expect((await api.get('/v1/sandboxes/sbx_00000000000000000000000000', key)).status).toBe(404);
    expect((await api.get('/v1/sandboxes/not-an-id', key)).status).toBe(400);
    expect((await api.postRaw('/v1/sandboxes', key, '{not json')).status).toBe(400);
    expect(
      (await api.post('/v1/sandboxes', key, { projectId: 'prj_00000000000000000000000000' })).status,
    ).toBe(404);
    const unknownTemplate = await api.post('/v1/sandboxes', key, {
      template: 'no-such-template',
      placement: { allowedPools: ['local'] },
    });
    expect(unknownTemplate.status).toBe(422);
    expect(unknownTemplate.text).toContain('template');
    expect(
      (await api.postRaw('/v1/sandboxes', key, JSON.stringify({ env: { A: 'x'.repeat(2 * 1024 * 1024) } })))
        .status,
    ).toBe(413);
    const sandbox = await e2e.running('fake');
    const id = sandbox.id;
    expect((await api.get(`/v1/sandboxes/${id}`, key)).status).toBe(200);
    expect((await api.get('/v1/sandboxes', key)).status).toBe(200);
    expect((await api.patch(`/v1/sandboxes/${id}`, key, { labels: { a: 'b' } })).status).toBe(200);
    expect((await api.post(`/v1/sandboxes/${id}/exec`, key, { command: 'echo hi' })).status).toBe(200);
    expect((await api.post(`/v1/sandboxes/${id}/exec`, key, {})).status).toBe(400);
    const streamed = await raw(`/v1/sandboxes/${id}/exec?stream=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo streamed' }),
    });
    expect(streamed.headers.get('content-type')).toBe('application/x-ndjson');
    const put = await raw(`/v1/sandboxes/${id}/files/content?path=/work/a.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
      body: 'bytes',
    });
    expect(put.status).toBe(204);
    expect((await api.get(`/v1/sandboxes/${id}/files/content?path=/work/a.txt`, key)).status).toBe(200);
    expect((await api.get(`/v1/sandboxes/${id}/files/content?path=/work/none`, key)).status).toBe(404);
    expect((await api.get(`/v1/sandboxes/${id}/files?path=/work`, key)).status).toBe(200);
    const snapshot = await api.post(`/v1/sandboxes/${id}/snapshots`, key, { kind: 'disk' });
    expect([201, 202]).toContain(snapshot.status);
    expect((await api.get('/v1/snapshots', key)).status).toBe(200);
    expect((await api.post(`/v1/sandboxes/${id}/stop`, key)).status).toBeLessThan(300);
    await e2e.until(id, 'stopped');
    expect((await api.post(`/v1/sandboxes/${id}/exec`, key, { command: 'true' })).status).toBe(409);
    const stoppedRead = await api.get(`/v1/sandboxes/${id}/files/content?path=/work/a.txt`, key);
    expect(stoppedRead.status).toBe(409);
    expect(stoppedRead.text).toContain(`${id} is stopped: cannot read a file (it must be running)`);
    const stoppedStop = await api.post(`/v1/sandboxes/${id}/stop`, key);
    expect(stoppedStop.text).toContain(`${id} is stopped: cannot stop it (it must be running)`);
    expect((await api.delete(`/v1/sandboxes/${id}`, key)).status).toBe(202);
    // A quota no sandbox of this size can ever fit in: refused at once.
    expect((await api.put(`/v1/admin/orgs/${orgId}/quota`, admin, { maxCPU: 1 })).status).toBe(200);
    const tight = (
      (await api.post(`/v1/admin/orgs/${orgId}/keys`, admin, { name: 'tight' })).body as { key: string }
    ).key;
    expect((await api.post('/v1/sandboxes', tight, { resources: { cpu: 2 } })).status).toBe(429);
    // MCP: a bad key is a 401 that says why and how to authenticate.
    const mcp = await raw('/v1/mcp', {
      method: 'POST',
      headers: {
        authorization: 'Bearer key_nope.nope',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toContain('the API key is not valid');

    expect(gateway.checked()).toBeGreaterThan(50);
    expect(gateway.problems).toEqual([]);
  }, 120_000);
});
