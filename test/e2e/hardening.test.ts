import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { parseConfig } from '../../lib/config.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

/** Defects an adversarial pass found (issue 18), each reproduced here against the local runtime. */
describe('hardening', () => {
  let e: E2e;
  let orgId: string;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    const org = z.object({ orgId: z.string() }).parse((await e.api.get('/v1/usage', e.key)).body);
    orgId = org.orgId;
  });

  afterAll(async () => {
    await e?.stop();
  });

  async function projectKey(name: string): Promise<string> {
    const project = z
      .object({ id: z.string() })
      .parse((await e.api.post(`/v1/admin/orgs/${orgId}/projects`, e.runtime.adminKey, { name })).body);
    return z.object({ key: z.string() }).parse(
      (
        await e.api.post(`/v1/admin/orgs/${orgId}/keys`, e.runtime.adminKey, {
          name,
          projectId: project.id,
        })
      ).body,
    ).key;
  }

  it("scopes Idempotency-Key to the caller's project: another project's key reusing it gets its own sandbox", async () => {
    const [a, b] = [await projectKey('idem-a'), await projectKey('idem-b')];
    const create = (key: string) =>
      fetch(`${e.runtime.url}/v1/sandboxes`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'idempotency-key': 'same-key-1',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ placement: { allowedPools: ['fake'] } }),
      });
    const first = await create(a);
    const second = await create(b);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    const [one, two] = [sandboxSchema.parse(await first.json()), sandboxSchema.parse(await second.json())];
    expect(two.id).not.toBe(one.id);
    expect(two.projectId).not.toBe(one.projectId);
    // Within one project the key still replays.
    const again = await create(a);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(sandboxSchema.parse(await again.json()).id).toBe(one.id);
  });

  it("never shows a project-restricted key another project's snapshot id, not even in a cursor", async () => {
    const [a, b] = [await projectKey('snap-a'), await projectKey('snap-b')];
    const snapshotOf = async (key: string) => {
      const sandbox = await e.running('fake', {}, key);
      const taken = await e.api.post(`/v1/sandboxes/${sandbox.id}/snapshots`, key, {});
      expect(taken.status, taken.text).toBe(201);
      return z.object({ id: z.string() }).parse(taken.body).id;
    };
    const mine: string[] = [];
    const theirs: string[] = [];
    for (let i = 0; i < 3; i++) {
      mine.push(await snapshotOf(a));
      theirs.push(await snapshotOf(b));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = z
        .object({ items: z.array(z.object({ id: z.string() })), nextCursor: z.string().nullable() })
        .parse(
          (await e.api.get(`/v1/snapshots?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`, a)).body,
        );
      seen.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
      const decoded = cursor === null ? '' : Buffer.from(cursor, 'base64url').toString('utf8');
      for (const id of theirs) expect(decoded).not.toContain(id);
    } while (cursor !== null);
    expect(seen.sort()).toEqual([...mine].sort());
  });

  it("refuses a pool credential reference outside the operator's rules, before reading any value", async () => {
    process.env.POOL_CREDENTIAL_HARDENING = 'allowed-token-value-0123';
    try {
      for (const [credentials, rule] of [
        [{ env: 'DIFFERENTLY_ADMIN_KEY' }, /DIFFERENTLY_\*/],
        [{ env: 'AWS_SECRET_ACCESS_KEY' }, /AWS_\*/],
        [{ env: 'HOME' }, /only variables under POOL_CREDENTIAL_/],
        [
          { secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf' },
          /differently\/pools\//,
        ],
      ] as const) {
        const refused = expectError(
          await e.api.post('/v1/admin/pools', e.runtime.adminKey, {
            name: 'leaky',
            adapter: 'remote',
            config: { endpoint: 'http://127.0.0.1:9' },
            credentials,
          }),
          400,
          'invalid_request',
        );
        expect(refused.error.message).toMatch(rule);
      }
      // The operator's opted-in variable is accepted (the plugin's reachability is another matter).
      const accepted = await e.api.post('/v1/admin/pools', e.runtime.adminKey, {
        name: 'allowed',
        adapter: 'remote',
        config: { endpoint: 'http://127.0.0.1:9' },
        credentials: { env: 'POOL_CREDENTIAL_HARDENING' },
      });
      expect(accepted.status, accepted.text).toBe(201);
      await e.api.delete('/v1/admin/pools/allowed', e.runtime.adminKey);
    } finally {
      delete process.env.POOL_CREDENTIAL_HARDENING;
    }
    // The config file's pools: any variable but the control plane's and the runtime's own.
    expect(() =>
      parseConfig({ pools: [{ name: 'p', adapter: 'remote', credentials: { env: 'AWS_SESSION_TOKEN' } }] }),
    ).toThrow(/pools\[0\]\.credentials: .*AWS_\*/);
  });

  /**
   * Starts a looping command as a streamed exec on devhost, marked with a unique argument, and resolves
   * with that marker once it runs. The host sees the command's processes (a jailed command's PIDs are its
   * own namespace's, so the marker, not a PID, finds them).
   */
  async function loopingCommand(sandboxId: string, client: AbortController): Promise<string> {
    const marker = `loop-${randomUUID()}`;
    const response = await fetch(`${e.runtime.url}/v1/sandboxes/${sandboxId}/exec?stream=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ args: ['sh', '-c', 'echo started; while true; do sleep 0.2; done', marker] }),
      signal: client.signal,
    });
    const reader = response.body?.getReader();
    let text = '';
    while (!text.includes('started')) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) break;
      text += new TextDecoder().decode(chunk.value);
    }
    expect(text).toContain('started');
    return marker;
  }

  /** Whether any host process carries the marker (the command's shell, jailed or not). */
  const alive = (marker: string) => spawnSync('pgrep', ['-f', marker]).status === 0;

  it('cancels a streamed command on the backend when the client disconnects', async () => {
    const sandbox = await e.running('local');
    const client = new AbortController();
    const marker = await loopingCommand(sandbox.id, client);
    expect(alive(marker)).toBe(true);
    client.abort();
    await waitFor(
      async () => alive(marker),
      (running) => !running,
      'the command to end with its client',
    );
  });

  it("ends a devhost sandbox's commands with the sandbox", async () => {
    const sandbox = await e.running('local');
    const client = new AbortController();
    const marker = await loopingCommand(sandbox.id, client);
    expect(alive(marker)).toBe(true);
    expect((await e.api.delete(`/v1/sandboxes/${sandbox.id}`, e.key)).status).toBe(202);
    await e.until(sandbox.id, 'terminated');
    await waitFor(
      async () => alive(marker),
      (running) => !running,
      'the command to end with its sandbox',
    );
    client.abort();
  });

  it('refuses cpu below its minimum or off its steps of 0.25, so no sandbox runs at 0 cpu of quota', async () => {
    for (const cpu of [0.0004, 0.1, 1.3, 1e-130]) {
      const refused = expectError(
        await e.api.post('/v1/sandboxes', e.key, { resources: { cpu } }),
        400,
        'invalid_request',
      );
      expect(refused.error.message).toMatch(/cpu/);
    }
    expect((await e.api.post('/v1/sandboxes', e.key, { resources: { cpu: 0.25 } })).status).toBe(202);
  });

  it("refuses a sandbox past the org's maxQueued waiting ones with 429 naming the limit", async () => {
    const org = z.object({ id: z.string() }).parse(
      (
        await e.api.post('/v1/admin/orgs', e.runtime.adminKey, {
          name: 'queue-bound',
          quota: { maxQueued: 2, maxSandboxes: 1, maxCPU: 1 },
        })
      ).body,
    );
    const key = z
      .object({ key: z.string() })
      .parse((await e.api.post(`/v1/admin/orgs/${org.id}/keys`, e.runtime.adminKey, { name: 'q' })).body).key;
    // One runs (the org's only slot); the next two wait; the fourth is refused at once.
    await e.running('fake', {}, key);
    for (let i = 0; i < 2; i++)
      expect((await e.api.post('/v1/sandboxes', key, { placement: { allowedPools: ['fake'] } })).status).toBe(
        202,
      );
    const refused = expectError(
      await e.api.post('/v1/sandboxes', key, { placement: { allowedPools: ['fake'] } }),
      429,
      'quota_exceeded',
    );
    expect(refused.error.message).toMatch(/maxQueued/);
    expect(refused.error.details).toMatchObject({ field: 'maxQueued', limit: 2 });
  });

  it('refuses more labels or env than a record may hold, naming the limit (never a 500 from the store)', async () => {
    const labels = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, 'v']));
    expect(
      expectError(await e.api.post('/v1/sandboxes', e.key, { labels }), 400, 'invalid_request').error.message,
    ).toMatch(/at most 64 labels/);
    const env = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`E${i}`, 'v'.repeat(30 * 1024)]));
    expect(
      expectError(await e.api.post('/v1/sandboxes', e.key, { env }), 400, 'invalid_request').error.message,
    ).toMatch(/at most 65536 bytes/);
    const many = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`E${i}`, 'v']));
    expect(
      expectError(await e.api.post('/v1/sandboxes', e.key, { env: many }), 400, 'invalid_request').error
        .message,
    ).toMatch(/at most 128 environment variables/);
  });

  it('answers a malformed %-escape in the path with 400, authenticated or not', async () => {
    for (const key of [e.key, undefined]) {
      const reply = await e.api.get('/v1/sandboxes/%ff', key);
      expect([400, 401]).toContain(reply.status);
      if (key !== undefined) expectError(reply, 400, 'invalid_request');
    }
    expectError(await e.api.get('/v1/sandboxes/%E0%A4%A', e.key), 400, 'invalid_request');
  });

  it('answers oversized requests and headers with the envelope, never a reset or an empty body', async () => {
    const big = await fetch(`${e.runtime.url}/v1/sandboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${e.key}`, 'content-type': 'application/json' },
      body: 'x'.repeat(11 * 1024 * 1024),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: 'payload_too_large' } });
    const headers = await fetch(`${e.runtime.url}/v1/health`, {
      headers: { 'x-padding': 'p'.repeat(20_000) },
    });
    expect(headers.status).toBe(431);
    expect(await headers.json()).toMatchObject({
      error: { code: 'invalid_request', message: expect.stringContaining('headers are larger') },
    });
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const response = await fetch(`${e.runtime.url}/v1/sandboxes`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${e.key}` },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'POST']);
    expect(await response.json()).toMatchObject({ error: { code: 'method_not_allowed' } });
  });

  it("keeps the control plane's labels when a tenant replaces its own with PATCH", async () => {
    const parent = await e.running('fake');
    const fork = await e.api.post(`/v1/sandboxes/${parent.id}/fork`, e.key);
    expect(fork.status, fork.text).toBe(202);
    const child = sandboxSchema.parse(fork.body);
    expect(child.labels['differently.dev/forked-from']).toBe(parent.id);
    const patched = await e.api.patch(`/v1/sandboxes/${child.id}`, e.key, { labels: { team: 'b' } });
    expect(patched.status, patched.text).toBe(200);
    expect(sandboxSchema.parse(patched.body).labels).toEqual({
      team: 'b',
      'differently.dev/forked-from': parent.id,
    });
  });
});
