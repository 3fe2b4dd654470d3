import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DifferentlyClient } from '../../sdk/index.ts';
import { DaytonaFake } from '../fakes/daytona-server.ts';
import { FreestyleFake } from '../fakes/freestyle-server.ts';
import { OpenSandboxFake } from '../fakes/opensandbox-server.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/** Provider pools registered at runtime on the local runtime, each backed by its fake server, used over HTTP. */
describe('provider pools end to end', () => {
  let e: E2e;
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;
  const fakes = {
    opensandbox: new OpenSandboxFake({ apiKey: 'os-e2e-key-0123456789' }),
    daytona: new DaytonaFake(),
    freestyle: new FreestyleFake(),
  };

  beforeAll(async () => {
    process.env.POOL_CREDENTIAL_OS = 'os-e2e-key-0123456789';
    // The Daytona and Freestyle fakes take any key; their pools must name one.
    process.env.POOL_CREDENTIAL_DTN = 'dtn-e2e-key-0123456789';
    process.env.POOL_CREDENTIAL_FS = 'fs-e2e-key-0123456789';
    await Promise.all(Object.values(fakes).map((fake) => fake.start()));
    e = await startE2e();
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
  });

  afterAll(async () => {
    await e?.stop();
    await Promise.all(Object.values(fakes).map((fake) => fake.stop()));
    delete process.env.POOL_CREDENTIAL_OS;
    delete process.env.POOL_CREDENTIAL_DTN;
    delete process.env.POOL_CREDENTIAL_FS;
  });

  it('runs a sandbox on an OpenSandbox pool: create, exec, files, snapshot, restore, delete', async () => {
    const pool = await admin.admin.createPool({
      name: 'os',
      adapter: 'opensandbox',
      trust: 'private',
      config: { apiURL: fakes.opensandbox.url, pollIntervalMs: 10 },
      credentials: { env: 'POOL_CREDENTIAL_OS' },
    });
    expect(pool).toMatchObject({ adapter: 'opensandbox', trust: 'private', health: { healthy: true } });
    expect(pool.features).toEqual(
      expect.arrayContaining(['exec', 'exec.stream', 'files', 'snapshots.disk', 'lifecycle.pause-resume']),
    );
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['os'] }, env: { WHO: 'os' } })).id,
      {
        intervalMs: 20,
      },
    );
    expect((await tenant.exec(sandbox.id, { command: 'echo "$WHO"; exit 5' })).exitCode).toBe(5);
    const out: string[] = [];
    for await (const event of tenant.execStream(sandbox.id, { command: 'echo streamed' }))
      if ('data' in event) out.push(event.data);
    expect(out.join('')).toBe('streamed\n');
    await tenant.writeFile(sandbox.id, '/work/a.txt', 'hello');
    const snapshot = await tenant.createSnapshot(sandbox.id);
    const restored = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ fromSnapshot: snapshot.id })).id,
      { intervalMs: 20 },
    );
    expect(new TextDecoder().decode(await tenant.readFile(restored.id, '/work/a.txt'))).toBe('hello');
    expect((await tenant.pause(sandbox.id)).status).toBe('paused');
    expect((await tenant.resume(sandbox.id)).status).toBe('running');
    for (const id of [sandbox.id, restored.id]) {
      await tenant.deleteSandbox(id);
      await e.until(id, 'terminated');
    }
    expect((await admin.admin.reconcile()).pools.find((p) => p.pool === 'os')).toMatchObject({
      orphansDeleted: 0,
      failed: 0,
    });
    const trust = await tenant.trust();
    expect(trust.pools.find((p) => p.name === 'os')?.limitations.join(' ')).toMatch(/reports no capacity/);
  });

  it('makes Daytona and Freestyle pools external whatever the config says, and places on them once the policy allows', async () => {
    const daytona = await admin.admin.createPool({
      name: 'dtn',
      adapter: 'daytona',
      trust: 'private',
      config: { apiURL: `${fakes.daytona.url}/api`, pollIntervalMs: 10 },
      credentials: { env: 'POOL_CREDENTIAL_DTN' },
    });
    const freestyle = await admin.admin.createPool({
      name: 'fs',
      adapter: 'freestyle',
      config: { apiURL: fakes.freestyle.url, pollIntervalMs: 10 },
      credentials: { env: 'POOL_CREDENTIAL_FS' },
    });
    expect([daytona.trust, freestyle.trust]).toEqual(['external', 'external']);
    const refused = await e.api.post('/v1/sandboxes', e.key, { placement: { allowedPools: ['dtn'] } });
    expect(refused.status).toBe(422);
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['dtn', 'fs'] });
    for (const name of ['dtn', 'fs']) {
      const sandbox = await tenant.waitUntilRunning(
        (await tenant.createSandbox({ placement: { allowedPools: [name] } })).id,
        { intervalMs: 20 },
      );
      expect(sandbox.pool).toBe(name);
      expect((await tenant.exec(sandbox.id, { command: 'echo hi' })).stdout).toBe('hi\n');
      await tenant.deleteSandbox(sandbox.id);
      await e.until(sandbox.id, 'terminated');
    }
    // Daytona's documented deviation reaches the API as 501 naming the operation.
    const onDaytona = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['dtn'] } })).id,
      { intervalMs: 20 },
    );
    await expect(tenant.exec(onDaytona.id, { command: 'cat', stdin: 'x' })).rejects.toMatchObject({
      status: 501,
      code: 'unsupported_operation',
    });
    await tenant.deleteSandbox(onDaytona.id);
  });

  it('refuses provider pools with bad settings, naming the field', async () => {
    await expect(
      admin.admin.createPool({ name: 'bad-os', adapter: 'opensandbox', config: {} }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/apiURL/),
    });
    await expect(
      admin.admin.createPool({ name: 'bad-fs', adapter: 'freestyle', config: { egress: 'sometimes' } }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/egress/) });
    // A vendor pool without its key would probe the vendor's public API with none: refused.
    await expect(
      admin.admin.createPool({
        name: 'keyless',
        adapter: 'daytona',
        config: { apiURL: `${fakes.daytona.url}/api` },
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/needs credentials/) });
  });
});
