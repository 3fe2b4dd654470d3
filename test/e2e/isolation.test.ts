import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import type { RouteDefinition } from '../../lib/http/types.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * Every route of the router's own table, called by every kind of principal: the expected status each
 * time, and no answer to another org that contains this org's ids.
 */
describe('isolation matrix over every route', () => {
  let e: E2e;
  const ids = { sandbox: '', snapshot: '', org: '', key: '' };
  const keys = { orgA: '', orgB: '', revoked: '', otherProject: '', operator: '' };

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    const admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    const a = await admin.admin.createOrg({ name: 'a' });
    const b = await admin.admin.createOrg({ name: 'b' });
    keys.orgA = (await admin.admin.createKey(a.id, { name: 'a' })).key;
    keys.orgB = (await admin.admin.createKey(b.id, { name: 'b' })).key;
    const one = await admin.admin.createProject(a.id, { name: 'one' });
    const other = await admin.admin.createProject(a.id, { name: 'other' });
    keys.otherProject = (await admin.admin.createKey(a.id, { name: 'p2', projectId: other.id })).key;
    keys.operator = (await admin.admin.createKey(a.id, { name: 'ops', role: 'admin' })).key;
    const revoked = await admin.admin.createKey(a.id, { name: 'gone' });
    await admin.admin.revokeKey(revoked.id);
    keys.revoked = revoked.key;
    const tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: keys.orgA });
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['fake'] }, projectId: one.id })).id,
      { intervalMs: 20 },
    );
    ids.sandbox = sandbox.id;
    ids.snapshot = (await tenant.createSnapshot(sandbox.id)).id;
    ids.org = a.id;
    ids.key = revoked.id;
  });

  afterAll(async () => {
    await e?.stop();
  });

  const call = async (route: RouteDefinition, key: string | undefined) => {
    const path = route.path
      .replace('{name}', 'fake')
      .replace('{pid}', '1')
      .replace(
        '{id}',
        route.path.startsWith('/v1/snapshots')
          ? ids.snapshot
          : route.path.startsWith('/v1/admin/orgs')
            ? ids.org
            : route.path.startsWith('/v1/admin/keys')
              ? ids.key
              : ids.sandbox,
      );
    const query = route.path.includes('/files') ? '?path=/work' : '';
    const bodies: Record<string, unknown> = {
      '/v1/sandboxes/{id}/exec': { command: 'true' },
      '/v1/sandboxes/{id}/snapshots': { kind: 'disk' },
      '/v1/sandboxes/{id}/ports': { port: 8080 },
      '/v1/sandboxes/{id}/processes': { command: 'cat' },
      '/v1/sandboxes/{id}/processes/{pid}/stdin': { data: 'x' },
      '/v1/sandboxes/{id}/processes/{pid}/resize': { cols: 80, rows: 24 },
      '/v1/sandboxes/{id}/processes/{pid}/signal': { signal: 'SIGTERM' },
      '/v1/sandboxes/{id}': { labels: {} },
      '/v1/admin/orgs': { name: 'x' },
      '/v1/admin/orgs/{id}/keys': { name: 'x' },
      // Through the MCP endpoint too, another org's listing shows none of this org's sandboxes.
      '/v1/mcp': {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'list_sandboxes', arguments: {} },
      },
    };
    const body =
      route.method === 'PUT'
        ? 'bytes'
        : route.method === 'GET' || route.method === 'DELETE'
          ? undefined
          : JSON.stringify(bodies[route.path] ?? {});
    const response = await fetch(`${e.runtime.url}${path}${query}`, {
      method: route.method,
      headers: {
        ...(key !== undefined && { authorization: `Bearer ${key}` }),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      ...(body !== undefined && { body }),
    });
    return { status: response.status, text: await response.text(), sent: path };
  };

  const routes = () =>
    e.runtime.plane.routes.filter((r) => r.method !== 'DELETE' || r.path !== '/v1/sandboxes/{id}');

  it('refuses missing, bad and revoked keys on every authenticated route (401)', async () => {
    for (const route of routes().filter((r) => r.auth !== 'none')) {
      for (const key of [undefined, 'key_01ARZ3NDEKTSV4RRFFQ69G5FAV.nope', keys.revoked]) {
        const reply = await call(route, key);
        expect(
          reply.status,
          `${route.method} ${route.path} with ${key === undefined ? 'no key' : 'a bad key'}`,
        ).toBe(401);
      }
    }
  });

  it('keeps org keys off admin routes (403) and admin keys (bootstrap or admin-role) off tenant routes (403)', async () => {
    for (const route of routes().filter((r) => r.auth === 'admin')) {
      for (const key of [keys.orgA, keys.otherProject]) {
        expect((await call(route, key)).status, `${route.method} ${route.path}`).toBe(403);
      }
    }
    for (const route of routes().filter((r) => r.auth === 'org')) {
      for (const key of [e.runtime.adminKey, keys.operator]) {
        expect((await call(route, key)).status, `${route.method} ${route.path}`).toBe(403);
      }
    }
  });

  it("keeps an admin-role key to its own organization's admin routes", async () => {
    const as = (path: string) =>
      fetch(`${e.runtime.url}${path}`, { headers: { authorization: `Bearer ${keys.operator}` } });
    const listed = await as('/v1/admin/orgs');
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { items: { id: string }[] }).items.map((o) => o.id)).toEqual([ids.org]);
    expect((await as(`/v1/admin/orgs/${ids.org}/keys`)).status).toBe(200);
    // Every admin route, for every org: its own org's routes it may call; the installation's are 403
    // (the operator's), another org's objects 404.
    for (const route of routes().filter((r) => r.auth === 'admin')) {
      const status = (await call(route, keys.operator)).status;
      expect([200, 201, 400, 403, 404, 409], `${route.method} ${route.path}`).toContain(status);
      if (route.adminScope !== 'org') expect(status, `${route.method} ${route.path}`).toBe(403);
    }
    const other = (await (
      await fetch(`${e.runtime.url}/v1/admin/orgs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${e.runtime.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'not-yours' }),
      })
    ).json()) as { id: string };
    for (const path of [
      `/v1/admin/orgs/${other.id}`,
      `/v1/admin/orgs/${other.id}/keys`,
      `/v1/admin/orgs/${other.id}/projects`,
      `/v1/admin/audit/verify?orgId=${other.id}`,
    ])
      expect((await as(path)).status, path).toBe(404);
    const foreignKey = (await (
      await fetch(`${e.runtime.url}/v1/admin/orgs/${other.id}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${e.runtime.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'theirs' }),
      })
    ).json()) as { id: string };
    for (const path of [`/v1/admin/keys/${foreignKey.id}/rotate`]) {
      const rotated = await fetch(`${e.runtime.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.operator}` },
      });
      expect(rotated.status, path).toBe(404);
    }
    const revoked = await fetch(`${e.runtime.url}/v1/admin/keys/${foreignKey.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${keys.operator}` },
    });
    expect(revoked.status).toBe(404);
    // The quota is the operator's, even for its own org.
    const quota = await fetch(`${e.runtime.url}/v1/admin/orgs/${ids.org}/quota`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${keys.operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ maxSandboxes: 100 }),
    });
    expect(quota.status).toBe(403);
  });

  it('shows another org nothing: 404 on its objects, and no ids of it in any answer', async () => {
    for (const route of routes().filter((r) => r.auth === 'org')) {
      // Another org sees none of org A's ids; a key of org A restricted to another project sees none of the
      // project's objects (its own org id is its own).
      for (const [key, hidden] of [
        [keys.orgB, [ids.sandbox, ids.snapshot, ids.org]],
        [keys.otherProject, [ids.sandbox, ids.snapshot]],
      ] as const) {
        const reply = await call(route, key);
        if (route.path.includes('{id}')) expect(reply.status, `${route.method} ${route.path}`).toBe(404);
        else if (route.path === '/v1/audit' && key === keys.otherProject) expect(reply.status).toBe(403);
        else expect(reply.status, `${route.method} ${route.path}`).toBeLessThan(300);
        // An id the caller sent may come back in its 404 (the same answer as for an id that does not exist).
        for (const id of hidden.filter((id) => !reply.sent.includes(id))) {
          expect(reply.text, `${route.method} ${route.path} leaked ${id}`).not.toContain(id);
        }
      }
    }
  });

  it('serves the unauthenticated routes to anyone', async () => {
    for (const route of routes().filter((r) => r.auth === 'none')) {
      expect((await call(route, undefined)).status, route.path).toBe(200);
    }
  });
});
