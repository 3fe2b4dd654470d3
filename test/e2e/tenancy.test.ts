import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError, waitFor } from '../helpers/http-client.ts';

/** Tenancy over HTTP on the local runtime: projects, key roles and rotation, quotas and usage, templates. */
describe('tenancy', () => {
  let e: E2e;
  let admin: DifferentlyClient;
  let orgId: string;
  const fake = new FakeAdapter();

  beforeAll(async () => {
    e = await startE2e({
      fakes: { fake: { adapter: fake } },
      config: { templates: [{ name: 'python', description: 'Python 3.12', image: 'python:3.12' }] },
    });
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    orgId = (await admin.admin.createOrg({ name: 'tenancy', quota: { maxCPU: 4, maxSandboxes: 3 } })).id;
  });

  afterAll(async () => {
    await e?.stop();
  });

  const as = (key: string) => new DifferentlyClient({ endpoint: e.runtime.url, apiKey: key, attempts: 1 });

  it('creates and lists projects; keys and sandboxes must name an existing project of the org', async () => {
    const project = await admin.admin.createProject(orgId, { name: 'web' });
    expect(project).toMatchObject({ orgId, name: 'web', id: expect.stringMatching(/^prj_/) });
    expect((await admin.admin.listProjects(orgId)).items.map((p) => p.id)).toEqual([project.id]);
    await expect(
      admin.admin.createKey(orgId, { name: 'x', projectId: 'prj_01ARZ3NDEKTSV4RRFFQ69G5FAV' }),
    ).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const other = await admin.admin.createOrg({ name: 'other' });
    // Another org's project is not this org's.
    await expect(admin.admin.createKey(other.id, { name: 'x', projectId: project.id })).rejects.toMatchObject(
      {
        status: 404,
      },
    );
    const member = as((await admin.admin.createKey(orgId, { name: 'all' })).key);
    await expect(
      member.createSandbox({
        projectId: 'prj_01ARZ3NDEKTSV4RRFFQ69G5FAV',
        placement: { allowedPools: ['fake'] },
      }),
    ).rejects.toMatchObject({ status: 404, code: 'not_found' });
    const restricted = as((await admin.admin.createKey(orgId, { name: 'web', projectId: project.id })).key);
    const sandbox = await restricted.createSandbox({ placement: { allowedPools: ['fake'] } });
    expect(sandbox.projectId).toBe(project.id);
    await restricted.deleteSandbox(sandbox.id);
  });

  it('refuses an admin key restricted to a project, and bad project bodies', async () => {
    const reply = await e.api.post(`/v1/admin/orgs/${orgId}/keys`, e.runtime.adminKey, {
      name: 'x',
      role: 'admin',
      projectId: 'prj_01ARZ3NDEKTSV4RRFFQ69G5FAV',
    });
    expect(expectError(reply, 400, 'invalid_request').error.message).toMatch(
      /admin key cannot be restricted/,
    );
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/projects`, e.runtime.adminKey, {}),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.post(`/v1/admin/orgs/${orgId}/projects`, e.runtime.adminKey, { name: 'x', extra: 1 }),
      400,
      'invalid_request',
    );
  });

  it('rotates a key: the new one works, the old one is 401 on its next call', async () => {
    const first = await admin.admin.createKey(orgId, { name: 'ci' });
    expect((await as(first.key).listSandboxes()).items).toBeDefined();
    const rotated = await admin.admin.rotateKey(first.id);
    expect(rotated.id).not.toBe(first.id);
    expect(rotated).toMatchObject({ name: 'ci', role: 'member', orgId });
    await expect(as(first.key).listSandboxes()).rejects.toMatchObject({
      status: 401,
      code: 'unauthenticated',
    });
    expect((await as(rotated.key).listSandboxes()).items).toBeDefined();
    // A revoked key cannot be rotated (it would resurrect access).
    await expect(admin.admin.rotateKey(first.id)).rejects.toMatchObject({ status: 409 });
    const listed = (await admin.admin.listKeys(orgId, { limit: 100 })).items;
    expect(listed.find((k) => k.id === first.id)?.revokedAt).not.toBeNull();
    expect(JSON.stringify(listed)).not.toContain(rotated.key.split('.')[1]);
    const audit = await admin.admin.verifyAudit(orgId);
    expect(audit.ok).toBe(true);
  });

  it('mints admin-role keys that administer their own org only, can be revoked, and reach no tenant route', async () => {
    const operator = await admin.admin.createKey(orgId, { name: 'ops', role: 'admin' });
    const ops = as(operator.key);
    expect((await ops.admin.getOrg(orgId)).id).toBe(orgId);
    // Its own org's keys and projects it manages; keys it mints work for that org.
    const minted = await ops.admin.createKey(orgId, { name: 'by-ops' });
    expect((await as(minted.key).listSandboxes()).items).toBeDefined();
    await ops.admin.revokeKey(minted.id);
    // The installation is the operator's: other orgs are 404, creating orgs and the quota are 403.
    const other = await admin.admin.createOrg({ name: 'not-ops' });
    await expect(ops.admin.getOrg(other.id)).rejects.toMatchObject({ status: 404 });
    await expect(ops.admin.createOrg({ name: 'mine' })).rejects.toMatchObject({ status: 403 });
    await expect(ops.admin.setQuota(orgId, { maxSandboxes: 99 })).rejects.toMatchObject({ status: 403 });
    expect((await ops.admin.listOrgs()).items.map((o) => o.id)).toEqual([orgId]);
    await expect(ops.listSandboxes()).rejects.toMatchObject({ status: 403 });
    await admin.admin.revokeKey(operator.id);
    await expect(ops.admin.getOrg(orgId)).rejects.toMatchObject({ status: 401 });
  });

  it('reports usage against quota and changes the quota; a lower quota makes new work wait, stops nothing', async () => {
    const key = (await admin.admin.createKey(orgId, { name: 'usage' })).key;
    const tenant = as(key);
    const before = await tenant.usage();
    expect(before.quota).toMatchObject({ maxCPU: 4, maxSandboxes: 3 });
    const sandbox = await e.running('fake', { resources: { cpu: 2 } }, key);
    const during = await tenant.usage();
    expect(during.usage.cpu).toBe(before.usage.cpu + 2);
    expect(during.available.cpu).toBe(4 - during.usage.cpu);
    // Lower the quota below usage: the running sandbox keeps running; a new one cannot fit now.
    const lowered = await admin.admin.setQuota(orgId, { maxCPU: 1 });
    expect(lowered.quota).toMatchObject({ maxCPU: 1, maxSandboxes: 3 });
    expect((await tenant.getSandbox(sandbox.id)).status).toBe('running');
    expect((await tenant.usage()).available.cpu).toBe(0);
    // A request bigger than the whole (new) quota can never run: refused at once.
    await expect(
      tenant.createSandbox({ resources: { cpu: 2 }, placement: { allowedPools: ['fake'] } }),
    ).rejects.toMatchObject({ status: 429, code: 'quota_exceeded' });
    // One that fits the quota but not what is left waits in the queue...
    const waiting = await tenant.createSandbox({
      resources: { cpu: 1 },
      placement: { allowedPools: ['fake'] },
    });
    // It is seen waiting for quota (the scheduler looked and recorded why), not merely not placed yet.
    const held = await waitFor(
      () => tenant.getSandbox(waiting.id),
      (s) => s.waitingFor !== null,
      'the scheduler to hold the sandbox for quota',
    );
    expect(held).toMatchObject({ status: 'queued', waitingFor: 'quota' });
    // ...and runs once the quota is raised again.
    await admin.admin.setQuota(orgId, { maxCPU: 8 });
    await e.until(waiting.id, 'running', key);
    await tenant.deleteSandbox(waiting.id);
    await tenant.deleteSandbox(sandbox.id);
    expectError(
      await e.api.put(`/v1/admin/orgs/${orgId}/quota`, e.runtime.adminKey, {}),
      400,
      'invalid_request',
    );
    expectError(
      await e.api.put(`/v1/admin/orgs/${orgId}/quota`, e.runtime.adminKey, { maxCPU: -1 }),
      400,
      'invalid_request',
    );
  });

  it('lists the templates of the config', async () => {
    const key = (await admin.admin.createKey(orgId, { name: 'templates' })).key;
    expect((await as(key).templates()).items).toEqual([
      { name: 'python', description: 'Python 3.12', image: 'python:3.12' },
    ]);
  });

  it("refuses labels under differently.dev/ and stamps the control plane's own on the backend instance", async () => {
    const key = (await admin.admin.createKey(orgId, { name: 'labels' })).key;
    const reply = await e.api.post('/v1/sandboxes', key, { labels: { 'differently.dev/org': 'forged' } });
    expect(expectError(reply, 400, 'invalid_request').error.message).toMatch(/differently\.dev\//);
    const project = await admin.admin.createProject(orgId, { name: 'stamped' });
    const sandbox = await e.running('fake', { labels: { team: 'a' }, projectId: project.id }, key);
    const sent = fake.createRequests.find((request) => request.id === sandbox.id);
    expect(sent?.labels).toEqual({
      team: 'a',
      'differently.dev/sandbox-id': sandbox.id,
      'differently.dev/installation': expect.stringMatching(/^inst_/),
      'differently.dev/org': orgId,
      'differently.dev/project': project.id,
    });
    expect((await as(key).getSandbox(sandbox.id)).labels).toEqual({ team: 'a' });
    await as(key).deleteSandbox(sandbox.id);
  });
});
