import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { bubblewrapAvailable } from '../../adapters/devhost/jail.ts';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

/**
 * The seeds' placement acceptance scenarios over HTTP on the local runtime (docs/acceptance.md maps each
 * scenario to its test). Pools: `private` (maxConcurrency 1, costly), `cheap` (private, in eu-west-1),
 * `ext` (external), plus the runtime's own `local` (devhost).
 */
describe('placement acceptance', () => {
  let e: E2e;
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;
  const adapters = {
    private: new FakeAdapter(),
    ext: new FakeAdapter({ features: ['exec', 'files', 'snapshots.disk', 'fork', 'gpu'] }),
  };

  beforeAll(async () => {
    e = await startE2e({
      fakes: {
        private: {
          adapter: adapters.private,
          pool: { maxConcurrency: 1, region: 'eu-west-1', costModel: { cpuHour: 0.05, memoryGiBHour: 0.01 } },
        },
        ext: {
          adapter: adapters.ext,
          features: ['exec', 'files', 'snapshots.disk', 'fork', 'gpu'],
          pool: {
            trust: 'external',
            region: 'us-east-1',
            costModel: { cpuHour: 0.01, memoryGiBHour: 0.001 },
          },
        },
      },
      config: {
        profiles: { 'gpu-job': { capabilities: ['gpu'], resources: { cpu: 2 } } },
      },
    });
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key, attempts: 1 });
  });

  afterAll(async () => {
    await e?.stop();
  });

  const create = (body: Parameters<DifferentlyClient['createSandbox']>[0]) =>
    tenant.createSandbox({ placement: { allowedPools: ['private', 'ext'] }, ...body });

  it('A: prefers the private pool even when the external one is cheaper', async () => {
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['ext'] });
    const sandbox = await tenant.waitUntilRunning((await create({})).id, { intervalMs: 20 });
    expect(sandbox.pool).toBe('private');
    expect(sandbox.placement.pool).toBe('private');
    await tenant.deleteSandbox(sandbox.id);
    await e.until(sandbox.id, 'terminated');
  });

  it('B: overflows to a permitted external pool when the private one is full, recording why', async () => {
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['ext'] });
    const first = await tenant.waitUntilRunning((await create({})).id, { intervalMs: 20 });
    expect(first.pool).toBe('private');
    const second = await tenant.waitUntilRunning((await create({})).id, { intervalMs: 20 });
    expect(second.pool).toBe('ext');
    expect(second.placement.rejected).toContainEqual({
      pool: 'private',
      reason: expect.stringMatching(/maxConcurrency/),
    });
    for (const s of [first, second]) await tenant.deleteSandbox(s.id);
    for (const s of [first, second]) await e.until(s.id, 'terminated');
  });

  it('C: refuses external placement when the policy does not allow it: the sandbox waits for the private pool', async () => {
    await admin.admin.setPolicy({ allowExternal: false, externalPools: [] });
    const first = await tenant.waitUntilRunning((await create({})).id, { intervalMs: 20 });
    const second = await create({ queueTimeoutSeconds: 60 });
    // Waits until the scheduler has looked at it (its reason recorded), however busy the machine is.
    const waiting = await waitFor(
      () => tenant.getSandbox(second.id),
      (s) => s.statusMessage !== null,
      'the scheduler to record why the sandbox waits',
    );
    expect(waiting.status).toBe('queued');
    expect(waiting.statusMessage).toMatch(
      /ext: external pool, and the policy does not allow external placement/,
    );
    // Only external pools allowed and the policy closed: refused at once, with the reason.
    const refused = await e.api.post('/v1/sandboxes', e.key, { placement: { allowedPools: ['ext'] } });
    expect(expectError(refused, 422, 'unsupported_capability').error.message).toMatch(/no pool is permitted/);
    await tenant.deleteSandbox(first.id);
    await e.until(second.id, 'running');
    await tenant.deleteSandbox(second.id);
    await e.until(second.id, 'terminated');
  });

  it('D: a confidential classification keeps work private even when the policy allows external pools', async () => {
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['ext'] });
    const refused = await e.api.post('/v1/sandboxes', e.key, {
      classification: 'confidential',
      placement: { allowedPools: ['ext'] },
    });
    expect(expectError(refused, 422, 'unsupported_capability').error.message).toMatch(
      /classification confidential/,
    );
    expectError(await e.api.post('/v1/sandboxes', e.key, { classification: 'nope' }), 400, 'invalid_request');
  });

  // Every combination of the policy (external placement allowed or not, the pool named or not) and the
  // request's classification (none, one that allows external work, one that keeps it private): the
  // external pool receives work exactly when all three let it, and the trust report says the same.
  const combinations = [true, false].flatMap((allowExternal) =>
    [true, false].flatMap((named) =>
      [undefined, 'public', 'confidential'].map((classification) => ({
        allowExternal,
        named,
        classification,
      })),
    ),
  );
  it.each(combinations)(
    'external placement with allowExternal $allowExternal, the pool named $named, classification $classification',
    async ({ allowExternal, named, classification }) => {
      await admin.admin.setPolicy({ allowExternal, externalPools: named ? ['ext'] : [] });
      const receives = allowExternal && named;
      const report = await tenant.trust();
      expect(report.pools.find((pool) => pool.name === 'ext')?.receivesExternalWork).toBe(receives);
      expect(report.externalPoolsInUse).toEqual(receives ? ['ext'] : []);
      const placed = receives && classification !== 'confidential';
      const reply = await e.api.post('/v1/sandboxes', e.key, {
        placement: { allowedPools: ['ext'] },
        ...(classification !== undefined && { classification }),
      });
      if (!placed) {
        const reason = expectError(reply, 422, 'unsupported_capability').error.message;
        expect(reason).toMatch(
          !allowExternal
            ? /does not allow external placement/
            : !named
              ? /externalPools/
              : /classification confidential keeps work on private pools/,
        );
        return;
      }
      expect(reply.status, reply.text).toBe(202);
      const { id } = z.object({ id: z.string() }).parse(reply.body);
      const sandbox = await tenant.waitUntilRunning(id, { intervalMs: 20 });
      expect(sandbox.pool).toBe('ext');
      await tenant.deleteSandbox(id);
      await e.until(id, 'terminated');
    },
  );

  it("E: 422 unsupported_capability when no permitted pool offers a capability, with each pool's reason", async () => {
    await admin.admin.setPolicy({ allowExternal: false, externalPools: [] });
    const reply = await e.api.post('/v1/sandboxes', e.key, { capabilities: ['gpu'] });
    const envelope = expectError(reply, 422, 'unsupported_capability');
    expect(envelope.error.details.rejected).toContainEqual({
      pool: 'private',
      reason: 'missing capabilities: gpu',
    });
    expectError(
      await e.api.post('/v1/sandboxes', e.key, { capabilities: ['isolation.none'] }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.post('/v1/sandboxes', e.key, { capabilities: ['teleport'] }),
      400,
      'invalid_request',
    );
    // With external placement allowed, the external pool offers it: a profile can ask for it too.
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['ext'] });
    const gpu = await tenant.waitUntilRunning((await tenant.createSandbox({ profile: 'gpu-job' })).id, {
      intervalMs: 20,
    });
    expect(gpu.pool).toBe('ext');
    expect(gpu.resources.cpu).toBe(2);
    expectError(await e.api.post('/v1/sandboxes', e.key, { profile: 'nope' }), 400, 'invalid_request');
    await tenant.deleteSandbox(gpu.id);
    await e.until(gpu.id, 'terminated');
  });

  it("F: pins a restore to its snapshot's pool, even when another pool ranks first", async () => {
    await admin.admin.setPolicy({ allowExternal: true, externalPools: ['ext'] });
    const onExt = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['ext'] } })).id,
      { intervalMs: 20 },
    );
    const snapshot = await tenant.createSnapshot(onExt.id);
    expect(snapshot.pool).toBe('ext');
    const restored = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ fromSnapshot: snapshot.id })).id,
      {
        intervalMs: 20,
      },
    );
    expect(restored.pool).toBe('ext');
    const excluded = await e.api.post('/v1/sandboxes', e.key, {
      fromSnapshot: snapshot.id,
      placement: { allowedPools: ['private'] },
    });
    expectError(excluded, 400, 'invalid_request');
    for (const s of [onExt, restored]) await tenant.deleteSandbox(s.id);
    await tenant.deleteSnapshot(snapshot.id);
  });

  it('G: ranks the requested region first among private pools', async () => {
    await admin.admin.createPool({ name: 'cheap', adapter: 'fake', region: 'us-west-2' });
    const sandbox = await tenant.waitUntilRunning(
      (
        await tenant.createSandbox({
          placement: { allowedPools: ['private', 'cheap'], regions: ['us-west-2'] },
        })
      ).id,
      { intervalMs: 20 },
    );
    expect(sandbox.pool).toBe('cheap');
    await tenant.deleteSandbox(sandbox.id);
    await e.until(sandbox.id, 'terminated');
    await admin.admin.deletePool('cheap');
  });
});

describe('pools and policy at runtime', () => {
  let e: E2e;
  let admin: DifferentlyClient;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: new FakeAdapter() } } });
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey, attempts: 1 });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('registers, shows, changes and removes a pool; new sandboxes can run on it at once', async () => {
    const created = await admin.admin.createPool({
      name: 'lab',
      adapter: 'fake',
      region: 'lab-1',
      maxConcurrency: 5,
      costModel: { cpuHour: 0.01, memoryGiBHour: 0.002 },
      features: ['exec', 'files', 'gpu'],
    });
    expect(created).toMatchObject({
      name: 'lab',
      source: 'api',
      trust: 'private',
      features: ['exec', 'files', 'gpu'],
      health: { healthy: true, reason: null },
      active: 0,
    });
    expect((await admin.admin.listPools()).items.map((p) => p.name)).toEqual(['local', 'fake', 'lab']);
    const running = await e.running('lab');
    expect(running.pool).toBe('lab');
    expect((await admin.admin.getPool('lab')).active).toBe(1);
    // A pool with live sandboxes cannot be removed.
    await expect(admin.admin.deletePool('lab')).rejects.toMatchObject({ status: 409, code: 'invalid_state' });
    const changed = await admin.admin.updatePool('lab', { maxConcurrency: 9, region: null });
    expect(changed.maxConcurrency).toBe(9);
    expect(changed.region).toBeUndefined();
    await e.destroy(running.id);
    expect((await admin.admin.deletePool('lab')).deleted).toBe(true);
    await expect(admin.admin.getPool('lab')).rejects.toMatchObject({ status: 404 });
    const audit = await admin.admin.verifyAudit();
    expect(audit.ok).toBe(true);
  });

  it('refuses bad pools with a 400 naming the problem', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'x', adapter: 'firecracker' }, /adapter must be one of/],
      [{ name: 'Bad Name', adapter: 'fake' }, /name/],
      [{ name: 'x', adapter: 'fake', surprise: true }, /surprise/],
      [{ name: 'x', adapter: 'devhost', config: { root: 42 } }, /config is not valid: root/],
      [
        { name: 'x', adapter: 'fake', credentials: { env: 'POOL_CREDENTIAL_UNSET_TEST' } },
        /POOL_CREDENTIAL_UNSET_TEST is not set/,
      ],
      [
        {
          name: 'x',
          adapter: 'fake',
          credentials: { secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:differently/pools/x' },
        },
        /Secrets Manager/,
      ],
      [{ name: 'x', adapter: 'fake', maxConcurrency: -1 }, /maxConcurrency/],
    ];
    for (const [body, message] of cases) {
      const reply = await e.api.post('/v1/admin/pools', e.runtime.adminKey, body);
      expect(expectError(reply, 400, 'invalid_request').error.message, JSON.stringify(body)).toMatch(message);
    }
    expectError(
      await e.api.post('/v1/admin/pools', e.runtime.adminKey, { name: 'fake', adapter: 'fake' }),
      409,
      'conflict',
    );
    expectError(
      await e.api.patch('/v1/admin/pools/fake', e.runtime.adminKey, { maxConcurrency: 2 }),
      409,
      'invalid_state',
    );
    expectError(await e.api.delete('/v1/admin/pools/fake', e.runtime.adminKey), 409, 'invalid_state');
    expectError(
      await e.api.patch('/v1/admin/pools/nope', e.runtime.adminKey, { maxConcurrency: 2 }),
      404,
      'not_found',
    );
    expectError(await e.api.patch('/v1/admin/pools/fake', e.runtime.adminKey, {}), 400, 'invalid_request');
  });

  it('never returns a credential value, only its reference', async () => {
    process.env.POOL_CREDENTIAL_LAB = 'super-secret-token-value';
    try {
      const pool = await admin.admin.createPool({
        name: 'secret',
        adapter: 'fake',
        credentials: { env: 'POOL_CREDENTIAL_LAB' },
      });
      expect(pool.credentials).toEqual({ env: 'POOL_CREDENTIAL_LAB' });
      const everything = JSON.stringify([await admin.admin.listPools(), await admin.admin.getPool('secret')]);
      expect(everything).not.toContain('super-secret-token-value');
      await admin.admin.deletePool('secret');
    } finally {
      delete process.env.POOL_CREDENTIAL_LAB;
    }
  });

  it('sets the policy, refusing unknown and private pools in externalPools', async () => {
    expect(await admin.admin.getPolicy()).toEqual({
      allowExternal: false,
      externalPools: [],
      source: 'config',
    });
    await admin.admin.createPool({ name: 'partner', adapter: 'fake', trust: 'external' });
    expect(await admin.admin.setPolicy({ allowExternal: true, externalPools: ['partner'] })).toEqual({
      allowExternal: true,
      externalPools: ['partner'],
      source: 'api',
    });
    expectError(
      await e.api.put('/v1/admin/policy', e.runtime.adminKey, {
        allowExternal: true,
        externalPools: ['nope'],
      }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.put('/v1/admin/policy', e.runtime.adminKey, {
        allowExternal: true,
        externalPools: ['fake'],
      }),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.put('/v1/admin/policy', e.runtime.adminKey, { allowExternal: 'yes' }),
      400,
      'invalid_request',
    );
  });

  it('publishes the trust report to tenants', async () => {
    const report = await new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key }).trust();
    const partner = report.pools.find((p) => p.name === 'partner');
    expect(partner).toMatchObject({ trust: 'external', receivesExternalWork: true, isolationVerified: true });
    const local = report.pools.find((p) => p.name === 'local');
    expect(local).toMatchObject({
      trust: 'private',
      // Jailed where bubblewrap works (CI installs it), host processes otherwise: the report says which.
      isolation: expect.stringMatching(bubblewrapAvailable() ? /^namespaces: bubblewrap/ : /^none/),
      receivesExternalWork: false,
    });
    expect(local?.limitations.join(' ')).toMatch(/dev mode only/);
    expect(report.externalPoolsInUse).toEqual(['partner']);
    expect(report.policy).toMatchObject({ allowExternal: true, source: 'api' });
    expect(report.classifications.confidential?.allowExternal).toBe(false);
  });
});
