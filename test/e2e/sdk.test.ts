import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import {
  DifferentlyClient,
  DifferentlyError,
  DifferentlyNetworkError,
  type ExecStreamLine,
} from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/** The SDK against the local runtime: every method, the typed errors, the retries. */
describe('the TypeScript SDK', () => {
  let e: E2e;
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;
  let orgId: string;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    const org = await admin.admin.createOrg({ name: 'sdk', quota: { maxSnapshots: 5 } });
    orgId = org.id;
    const { key } = await admin.admin.createKey(org.id, { name: 'sdk' });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: key });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('covers the admin routes', async () => {
    expect((await admin.health()).status).toBe('ok');
    expect((await admin.admin.getOrg(orgId)).name).toBe('sdk');
    expect((await admin.admin.listOrgs()).items.map((o) => o.id)).toContain(orgId);
    const extra = await admin.admin.createKey(orgId, { name: 'temporary' });
    expect((await admin.admin.listKeys(orgId)).items.map((k) => k.id)).toContain(extra.id);
    expect((await admin.admin.revokeKey(extra.id)).revokedAt).not.toBeNull();
    const revoked = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: extra.key });
    await expect(revoked.listSandboxes()).rejects.toMatchObject({ status: 401, code: 'unauthenticated' });
    expect((await admin.admin.reconcile()).ran).toBe(true);
    expect((await admin.openapi()).openapi).toBe('3.1.0');
  });

  it('speaks JSON-RPC to the MCP endpoint as the key: its answers in order, none for a notification', async () => {
    const [initialized] = await tenant.mcp({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'sdk-test', version: '1' },
      },
    });
    expect(initialized).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      result: { serverInfo: { name: expect.any(String) } },
    });
    const [listed] = await tenant.mcp({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(listed).toMatchObject({
      id: 2,
      result: { tools: expect.arrayContaining([expect.objectContaining({ name: expect.any(String) })]) },
    });
    expect(await tenant.mcp({ jsonrpc: '2.0', method: 'notifications/initialized' })).toEqual([]);
    await expect(admin.mcp({ jsonrpc: '2.0', id: 3, method: 'tools/list' })).rejects.toMatchObject({
      status: 403,
    });
  });

  it('runs a sandbox through its whole life', async () => {
    const created = await tenant.createSandbox({ placement: { allowedPools: ['fake'] }, env: { A: '1' } });
    const sandbox = await tenant.waitUntilRunning(created.id, { intervalMs: 20 });
    expect(sandbox.status).toBe('running');
    expect((await tenant.getSandbox(sandbox.id)).id).toBe(sandbox.id);
    expect((await tenant.listSandboxes({ status: 'running' })).items.map((s) => s.id)).toContain(sandbox.id);
    expect((await tenant.updateSandbox(sandbox.id, { labels: { team: 'sdk' } })).labels).toEqual({
      team: 'sdk',
    });
    expect((await tenant.exec(sandbox.id, { command: 'echo hi' })).exitCode).toBe(0);
    const events: ExecStreamLine[] = [];
    for await (const event of tenant.execStream(sandbox.id, { command: 'echo streamed' })) events.push(event);
    expect(events).toEqual([{ stream: 'stdout', data: 'echo streamed\n' }, { exitCode: 0 }]);
    await tenant.writeFile(sandbox.id, '/work/a.txt', 'content');
    expect(new TextDecoder().decode(await tenant.readFile(sandbox.id, '/work/a.txt'))).toBe('content');
    expect((await tenant.listFiles(sandbox.id, '/work')).items.map((f) => f.name)).toEqual(['a.txt']);
    expect((await tenant.pause(sandbox.id)).status).toBe('paused');
    expect((await tenant.resume(sandbox.id)).status).toBe('running');
    expect((await tenant.stop(sandbox.id)).status).toBe('stopped');
    expect((await tenant.start(sandbox.id)).status).toBe('running');
    const snapshot = await tenant.createSnapshot(sandbox.id);
    expect((await tenant.getSnapshot(snapshot.id)).id).toBe(snapshot.id);
    expect((await tenant.listSnapshots()).items.map((s) => s.id)).toContain(snapshot.id);
    const child = await tenant.fork(sandbox.id);
    expect(
      (await tenant.waitUntilRunning(child.id, { intervalMs: 20 })).labels['differently.dev/forked-from'],
    ).toBe(sandbox.id);
    expect((await tenant.exposePort(sandbox.id, 8080)).url).toContain('8080');
    expect((await tenant.deleteSnapshot(snapshot.id)).deleted).toBe(true);
    expect((await tenant.deleteSandbox(sandbox.id)).status).toBe('terminating');
    await tenant.deleteSandbox(child.id);
    expect((await tenant.audit({ limit: 100 })).items.some((a) => a.action === 'sandbox.terminating')).toBe(
      true,
    );
    expect((await admin.admin.verifyAudit(orgId)).ok).toBe(true);
  });

  it('makes one sandbox of a retried create with the same Idempotency-Key', async () => {
    const first = await tenant.createSandbox({}, { idempotencyKey: 'sdk-once' });
    const again = await tenant.createSandbox({}, { idempotencyKey: 'sdk-once' });
    expect(again.id).toBe(first.id);
    await tenant.deleteSandbox(first.id);
  });

  it('throws typed errors carrying code, message and details', async () => {
    const error = await tenant.getSandbox('sbx_01ARZ3NDEKTSV4RRFFQ69G5FAV').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DifferentlyError);
    expect(error).toMatchObject({ status: 404, code: 'not_found', details: { kind: 'sandbox' } });
    const offline = new DifferentlyClient({ endpoint: 'http://127.0.0.1:9', apiKey: 'x', attempts: 1 });
    const network = await offline.health().catch((e: unknown) => e);
    expect(network).toBeInstanceOf(DifferentlyNetworkError);
    expect((network as Error).message).toBe('could not reach http://127.0.0.1:9');
  });

  it('retries 503 with backoff on requests safe to repeat, and not on the others', async () => {
    let calls = 0;
    const flaky: typeof fetch = async (input, init) => {
      calls++;
      if (calls <= 2)
        return new Response(
          JSON.stringify({ error: { code: 'provider_unavailable', message: 'busy', details: {} } }),
          { status: 503 },
        );
      return fetch(input, init);
    };
    const client = new DifferentlyClient({
      endpoint: e.runtime.url,
      apiKey: e.runtime.adminKey,
      fetch: flaky,
      retryBaseMs: 1,
    });
    expect((await client.health()).status).toBe('ok');
    expect(calls).toBe(3);
    calls = 0;
    await expect(client.admin.reconcile()).rejects.toMatchObject({
      status: 503,
      code: 'provider_unavailable',
    });
    expect(calls).toBe(1);
  });
});
