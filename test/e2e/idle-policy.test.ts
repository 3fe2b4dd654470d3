import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as z from 'zod';
import { bubblewrapAvailable } from '../../adapters/devhost/jail.ts';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { orgSchema } from '../../lib/schemas/tenancy.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';
import { jsonObject, parseJson } from '../helpers/json.ts';

/**
 * The idle policy over HTTP on the local runtime: real queues carry the delayed checks and the
 * operations worker pauses or stops the sandbox; the next call resumes it. Waits end on the state.
 */
describe.each(['memory', 'dynamodb'] as const)('idle policy over HTTP (%s store)', (store) => {
  let e: E2e;

  beforeAll(async () => {
    e = await startE2e({
      fakes: { pausing: { adapter: new FakeAdapter() } },
      ...(store === 'dynamodb' && { dynamodbEndpoint: inject('dynamodbEndpoint') }),
    });
  });

  afterAll(async () => {
    await e?.stop();
  });

  const idled = (id: string, status: string) =>
    waitFor(
      () => e.get(id),
      (s) => s.status === status && s.idle?.idledAt !== null,
      `${status} for idleness`,
      60_000,
    );

  it('pauses a sandbox idle for its period and resumes it on the next exec', async () => {
    const sandbox = await e.running('pausing', { idle: { afterSeconds: 1 } });
    expect(sandbox.idle).toMatchObject({ afterSeconds: 1, action: null, idledAt: null });
    const paused = await idled(sandbox.id, 'paused');
    expect(paused.statusMessage).toBeNull();
    expect(paused.operation).toMatchObject({ action: 'pause', cause: 'idle', state: 'succeeded' });
    const exec = await e.api.post(`/v1/sandboxes/${sandbox.id}/exec`, e.key, {
      command: 'echo awake',
    });
    expect(exec.status, exec.text).toBe(200);
    // The output proves the resume; with a 1 s period it may fall idle again at once, so the status after
    // is not asserted (test/integration/sandboxes/idle-policy.test.ts checks it on a clock of its own).
    expect(z.object({ stdout: z.string() }).parse(exec.body).stdout).toContain('awake');
    const audit = z
      .object({
        items: z.array(
          z.object({ action: z.string(), target: z.string(), details: z.record(z.string(), z.unknown()) }),
        ),
      })
      .parse((await e.api.get('/v1/audit?limit=100', e.key)).body)
      .items.filter((event) => event.target === sandbox.id && event.details.cause === 'idle')
      .map((event) => event.action);
    expect(audit.slice(0, 4)).toEqual([
      'sandbox.pausing',
      'sandbox.paused',
      'sandbox.resuming',
      'sandbox.running',
    ]);
    await e.destroy(sandbox.id);
  });

  it.skipIf(!bubblewrapAvailable())(
    'stops a devhost sandbox whose policy says stop and starts it again on a file read, its files kept',
    async () => {
      const sandbox = await e.running('local', { idle: { afterSeconds: 1, action: 'stop' } });
      const write = await fetch(
        `${e.runtime.url}/v1/sandboxes/${sandbox.id}/files/content?path=/work/kept.txt`,
        {
          method: 'PUT',
          headers: { authorization: `Bearer ${e.key}`, 'content-type': 'application/octet-stream' },
          body: 'kept',
        },
      );
      expect(write.status, await write.text()).toBeLessThan(300);
      await idled(sandbox.id, 'stopped');
      const read = await e.api.get(`/v1/sandboxes/${sandbox.id}/files/content?path=/work/kept.txt`, e.key);
      expect(read.status, read.text).toBe(200);
      expect(read.text).toBe('kept');
      await e.destroy(sandbox.id);
    },
  );

  it.skipIf(!bubblewrapAvailable())(
    'never idles a sandbox under a command that runs longer than its period',
    async () => {
      const sandbox = await e.running('local', { idle: { afterSeconds: 3 } });
      // 6 s of silence, twice the idle period: without the running command counting, the sandbox would
      // be stopped under it and the command killed.
      const stream = await fetch(`${e.runtime.url}/v1/sandboxes/${sandbox.id}/exec?stream=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${e.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'sleep 6; echo finished' }),
      });
      const lines = (await stream.text())
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => parseJson(jsonObject, line));
      expect(lines.map((line) => line.data).join('')).toContain('finished');
      expect(lines.at(-1)).toEqual({ exitCode: 0 });
      const audit = z
        .object({
          items: z.array(z.object({ target: z.string(), details: z.record(z.string(), z.unknown()) })),
        })
        .parse((await e.api.get('/v1/audit?limit=100', e.key)).body)
        .items.filter((event) => event.target === sandbox.id && event.details.cause === 'idle');
      expect(audit).toEqual([]);
      await e.destroy(sandbox.id);
    },
  );

  it('sets and clears an org default through the admin API; a bad policy is a 400', async () => {
    const orgId = z.object({ orgId: z.string() }).parse((await e.api.get('/v1/usage', e.key)).body).orgId;
    const set = await e.api.put(`/v1/admin/orgs/${orgId}/idle-policy`, e.runtime.adminKey, {
      policy: { afterSeconds: 900, action: 'stop' },
    });
    expect(set.status, set.text).toBe(200);
    expect(orgSchema.parse(set.body).idlePolicy).toEqual({ afterSeconds: 900, action: 'stop' });
    const created = await e.api.post('/v1/sandboxes', e.key, { placement: { allowedPools: ['pausing'] } });
    expect(z.object({ idle: z.unknown() }).parse(created.body).idle).toMatchObject({
      afterSeconds: 900,
      action: 'stop',
    });
    expectError(
      await e.api.put(`/v1/admin/orgs/${orgId}/idle-policy`, e.runtime.adminKey, {
        policy: { afterSeconds: 0 },
      }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.post('/v1/sandboxes', e.key, { idle: { afterSeconds: 5, action: 'sleep' } }),
      400,
      'invalid_request',
    );
    const cleared = await e.api.put(`/v1/admin/orgs/${orgId}/idle-policy`, e.runtime.adminKey, {
      policy: null,
    });
    expect(orgSchema.parse(cleared.body).idlePolicy).toBeNull();
    await e.destroy(z.object({ id: z.string() }).parse(created.body).id);
  });
});

describe('E2B autoPause onto the idle policy', () => {
  let e: E2e;

  beforeAll(async () => {
    e = await startE2e({
      fakes: {
        pausing: { adapter: new FakeAdapter() },
        // Stops but cannot pause: idleness there would stop a sandbox, which E2B would read as paused.
        stopping: {
          adapter: new FakeAdapter(),
          features: ['exec', 'files', 'lifecycle.stop-start'],
        },
      },
      config: { e2b: { allowedPools: ['stopping', 'pausing'] } },
    });
    process.env.E2B_API_URL = `${e.runtime.url}/e2b`;
    process.env.E2B_SANDBOX_URL = `${e.runtime.url}/e2b`;
  });

  afterAll(async () => {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await e?.stop();
  });

  it('pauses a sandbox created with onTimeout pause when its timeout passes without a call, and resumes it on the next command', async () => {
    const created = await e.api.post('/v1/admin/orgs', e.runtime.adminKey, { name: 'e2b' });
    const orgId = z.object({ id: z.string() }).parse(created.body).id;
    const key = z
      .object({ e2bApiKey: z.string(), key: z.string() })
      .parse((await e.api.post(`/v1/admin/orgs/${orgId}/keys`, e.runtime.adminKey, { name: 'k' })).body);
    const sandbox = await Sandbox.create({
      apiKey: key.e2bApiKey,
      timeoutMs: 1000,
      lifecycle: { onTimeout: 'pause' },
    });
    try {
      const view = await e.get(sandbox.sandboxId, key.key);
      expect(view.idle).toMatchObject({ afterSeconds: 1, action: 'pause' });
      // Placed only where it can pause, though the pool that only stops comes first.
      expect(view.pool).toBe('pausing');
      await waitFor(
        () => e.get(sandbox.sandboxId, key.key),
        (s) => s.status === 'paused',
        'paused after its timeout',
        60_000,
      );
      const run = await sandbox.commands.run('echo again');
      expect(run.stdout).toContain('again');
    } finally {
      await sandbox.kill();
    }
  });
});

describe('E2B onTimeout pause where no pool can pause', () => {
  let e: E2e;

  beforeAll(async () => {
    e = await startE2e({
      fakes: {
        stopping: { adapter: new FakeAdapter(), features: ['exec', 'files', 'lifecycle.stop-start'] },
      },
      config: { e2b: { allowedPools: ['stopping'] } },
    });
    process.env.E2B_API_URL = `${e.runtime.url}/e2b`;
    process.env.E2B_SANDBOX_URL = `${e.runtime.url}/e2b`;
  });

  afterAll(async () => {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await e?.stop();
  });

  it('refuses the create, naming pausing, rather than stopping a sandbox it would report as paused', async () => {
    const created = await e.api.post('/v1/admin/orgs', e.runtime.adminKey, { name: 'e2b-stoppers' });
    const orgId = z.object({ id: z.string() }).parse(created.body).id;
    const key = z
      .object({ e2bApiKey: z.string() })
      .parse((await e.api.post(`/v1/admin/orgs/${orgId}/keys`, e.runtime.adminKey, { name: 'k' })).body);
    await expect(
      Sandbox.create({ apiKey: key.e2bApiKey, lifecycle: { onTimeout: 'pause' } }),
    ).rejects.toThrow(/lifecycle\.pause-resume/);
    // Without it, the same pool serves the create.
    const plain = await Sandbox.create({ apiKey: key.e2bApiKey });
    await plain.kill();
  });
});
