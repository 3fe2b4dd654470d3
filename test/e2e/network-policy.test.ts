import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapAvailable } from '../../adapters/devhost/jail.ts';
import { FakeAdapter, fakeDefaultFeatures } from '../../adapters/fake/fake-adapter.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { orgKey, pointE2bAt } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * Egress policies over HTTP on the local runtime (docs/network.md): the policy in force on the record,
 * the view and the creation's audit event; placed only where a pool declares the features that enforce
 * it, the others recorded as rejected with the feature they lack; what reaches the backend.
 * Pools: `open` (a fake declaring no egress feature), `guarded` (a fake declaring them all), `local`.
 */
describe('egress policy per sandbox', () => {
  let e: E2e;
  let tenant: DifferentlyClient;
  const open = new FakeAdapter({
    features: fakeDefaultFeatures.filter((feature) => !feature.startsWith('network.')),
  });
  const guarded = new FakeAdapter();
  const both = { allowedPools: ['open', 'guarded'] };

  beforeAll(async () => {
    e = await startE2e({
      fakes: {
        open: { adapter: open, features: fakeDefaultFeatures.filter((f) => !f.startsWith('network.')) },
        guarded: { adapter: guarded },
      },
      config: {
        templates: [{ name: 'offline', network: { egress: 'deny' } }],
        network: { denyAlways: ['169.254.0.0/16', '10.20.0.0/16'] },
        e2b: { allowedPools: ['open', 'guarded'] },
      },
    });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key, attempts: 1 });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('places an allow-list only where it is enforced, and keeps the policy in force everywhere it is seen', async () => {
    const created = await tenant.createSandbox({
      placement: both,
      network: {
        egress: 'allowlist',
        allow: ['pypi.org:443', '*.example.com', '203.0.113.0/24', 'pypi.org:443'],
      },
    });
    const sandbox = await tenant.waitUntilRunning(created.id, { intervalMs: 20 });
    expect(sandbox.pool).toBe('guarded');
    const inForce = {
      egress: 'allowlist',
      allow: ['pypi.org:443', '*.example.com', '203.0.113.0/24'],
      denyAlways: ['169.254.0.0/16', '10.20.0.0/16'],
      from: 'request',
    };
    expect(sandbox.network).toEqual(inForce);
    expect(sandbox.capabilities).toEqual(
      expect.arrayContaining(['network.egress.allowlist', 'network.egress.domains', 'network.egress.ports']),
    );
    expect(sandbox.placement.rejected).toContainEqual({
      pool: 'open',
      reason: expect.stringContaining('network.egress'),
    });
    // What the backend was asked to enforce, from its first instruction.
    const sent = guarded.createRequests.find((request) => request.id === sandbox.id);
    expect(sent?.network).toEqual(inForce);
    const events = await tenant.audit({ limit: 100 });
    const creation = events.items.find(
      (event) => event.action === 'sandbox.created' && event.target === sandbox.id,
    );
    expect(creation?.details).toMatchObject({ network: inForce });
    await tenant.deleteSandbox(sandbox.id);
  });

  it('shows in the trust report what each pool enforces, and the installation’s deny-list', async () => {
    const report = await tenant.trust();
    const egressOf = (name: string) => report.pools.find((pool) => pool.name === name)?.egress;
    expect(egressOf('guarded')).toEqual(['allow', 'deny', 'allowlist', 'domains', 'ports']);
    expect(egressOf('open')).toEqual([]);
    expect(report.network).toEqual({ default: null, denyAlways: ['169.254.0.0/16', '10.20.0.0/16'] });
  });

  it('leaves a sandbox that asks for no policy to any pool, with none in force', async () => {
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['open'] } })).id,
      { intervalMs: 20 },
    );
    expect(sandbox.network).toBeNull();
    expect(open.createRequests.find((request) => request.id === sandbox.id)?.network).toBeUndefined();
    await tenant.deleteSandbox(sandbox.id);
  });

  it('takes the template’s policy when the request names none', async () => {
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: both, template: 'offline' })).id,
      { intervalMs: 20 },
    );
    expect(sandbox.network).toMatchObject({ egress: 'deny', from: 'template' });
    expect(sandbox.pool).toBe('guarded');
    await tenant.deleteSandbox(sandbox.id);
  });

  it("takes the org's default when neither the request nor its template names one, set by the org's admin key", async () => {
    const admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey, attempts: 1 });
    const { orgId } = await tenant.usage();
    // The org's own admin-role key may set it; another org's may not see the org at all.
    const own = await admin.admin.createKey(orgId, { name: 'net-admin', role: 'admin' });
    const orgAdmin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: own.key, attempts: 1 });
    const allowlist = { egress: 'allowlist' as const, allow: ['pypi.org:443', '*.example.com'] };
    expect((await orgAdmin.admin.setNetworkPolicy(orgId, allowlist)).networkPolicy).toEqual(allowlist);
    const other = await admin.admin.createOrg({ name: 'elsewhere' });
    const otherAdmin = new DifferentlyClient({
      endpoint: e.runtime.url,
      apiKey: (await admin.admin.createKey(other.id, { name: 'x', role: 'admin' })).key,
      attempts: 1,
    });
    await expect(otherAdmin.admin.setNetworkPolicy(orgId, null)).rejects.toMatchObject({ code: 'not_found' });
    expect((await admin.admin.getOrg(orgId)).networkPolicy).toEqual(allowlist);

    const byDefault = await tenant.waitUntilRunning((await tenant.createSandbox({ placement: both })).id, {
      intervalMs: 20,
    });
    // The org's allow-list, placed where it is enforced, with the installation's deny-list still in force.
    expect(byDefault.network).toEqual({
      egress: 'allowlist',
      allow: ['pypi.org:443', '*.example.com'],
      denyAlways: expect.arrayContaining(['169.254.0.0/16', '10.20.0.0/16']),
      from: 'org',
    });
    expect(byDefault.pool).toBe('guarded');
    // The request's own policy and the template's come first.
    const asked = await tenant.createSandbox({ placement: both, network: { egress: 'allow' } });
    expect(asked.network).toMatchObject({ egress: 'allow', from: 'request' });
    const templated = await tenant.createSandbox({ placement: both, template: 'offline' });
    expect(templated.network).toMatchObject({ egress: 'deny', from: 'template' });
    // A policy that is not one is refused, naming its field; none removes the default.
    await expect(
      admin.admin.setNetworkPolicy(orgId, { egress: 'open' } as unknown as typeof allowlist),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect((await admin.admin.setNetworkPolicy(orgId, null)).networkPolicy).toBeNull();
    const after = await tenant.createSandbox({ placement: { allowedPools: ['open'] } });
    expect(after.network).toBeNull();
    const changes = [];
    for (let cursor: string | null | undefined; cursor !== null; ) {
      const page = await tenant.audit({ limit: 100, ...(cursor !== undefined && { cursor }) });
      changes.push(...page.items.filter((event) => event.action === 'org.network-policy-changed'));
      cursor = page.nextCursor;
    }
    expect(changes.map((event) => event.details.to)).toEqual([allowlist, null]);
    for (const id of [byDefault.id, asked.id, templated.id, after.id]) await tenant.deleteSandbox(id);
  });

  it('refuses a policy no permitted pool enforces at once, naming the feature, and a malformed one with its field', async () => {
    await expect(
      tenant.createSandbox({ placement: { allowedPools: ['open'] }, network: { egress: 'deny' } }),
    ).rejects.toMatchObject({
      status: 422,
      code: 'unsupported_capability',
      message: expect.stringContaining('open: missing capabilities: network.egress.deny'),
    });
    await expect(
      tenant.createSandbox({ network: { egress: 'allowlist', allow: ['https://pypi.org/simple'] } }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
      message: expect.stringMatching(/expected a domain/),
    });
    await expect(tenant.createSandbox({ network: { egress: 'allowlist' } })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('needs at least one destination'),
    });
  });

  it.runIf(bubblewrapAvailable())(
    'offers egress deny on a jailed devhost pool, and nothing it cannot enforce',
    async () => {
      const sandbox = await tenant.waitUntilRunning(
        (await tenant.createSandbox({ placement: { allowedPools: ['local'] }, network: { egress: 'deny' } }))
          .id,
        { intervalMs: 20 },
      );
      expect(sandbox.pool).toBe('local');
      const result = await tenant.exec(sandbox.id, {
        args: ['/bin/sh', '-c', 'n=0; while read -r l; do n=$((n+1)); done < /proc/net/dev; echo $((n-2))'],
      });
      expect(result.stdout.trim()).toBe('1');
      await tenant.deleteSandbox(sandbox.id);
      await expect(
        tenant.createSandbox({ placement: { allowedPools: ['local'] }, network: { egress: 'allow' } }),
      ).rejects.toMatchObject({
        status: 422,
        message: expect.stringContaining('local: missing capabilities: network.egress.allow'),
      });
    },
  );

  it('takes E2B’s allowInternetAccess and network options and answers them in getInfo', async () => {
    pointE2bAt(e.runtime.url);
    const { e2bApiKey: apiKey, key } = await orgKey(e.runtime, 'e2b-network');
    const own = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: key, attempts: 1 });
    const offline = await Sandbox.create({ apiKey, allowInternetAccess: false });
    expect((await own.getSandbox(offline.sandboxId)).network).toMatchObject({
      egress: 'deny',
      from: 'request',
    });
    const listed = await Sandbox.create({
      apiKey,
      network: { denyOut: ['0.0.0.0/0'], allowOut: ['pypi.org', '8.8.8.8/32'] },
    });
    expect((await own.getSandbox(listed.sandboxId)).network).toMatchObject({
      egress: 'allowlist',
      allow: ['pypi.org', '8.8.8.8/32'],
    });
    const info = await listed.getInfo();
    expect(info.allowInternetAccess).toBe(false);
    await expect(Sandbox.create({ apiKey, network: { denyOut: ['10.0.0.0/8'] } })).rejects.toThrow(
      /denyOut of some ranges only \(10\.0\.0\.0\/8\)/,
    );
    // A policy is fixed at create: the SDK's update is refused, naming the route.
    await expect(listed.updateNetwork({ allowOut: ['example.com'] })).rejects.toThrow(
      /PUT .*\/network is not offered/,
    );
    for (const sandbox of [offline, listed]) await sandbox.kill();
  });
});
