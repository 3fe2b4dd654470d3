import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../lib/ids.ts';
import { sweep } from '../../lib/scheduler/sweep.ts';
import { DifferentlyClient } from '../../sdk/index.ts';
import { LambdaMicrovmsFake } from '../fakes/lambda-microvms-server.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { fakeImage as image } from '../helpers/lambda-microvms.ts';

const accessKeyId = 'AKIAE2EMICROVMS00001';

/**
 * A lambda-microvms pool on the local runtime (several containers per function), against the fake
 * service reached by the real SDK client: the adapter signs with the default credential chain, as on
 * Lambda, so the test gives it environment credentials.
 */
describe('a Lambda MicroVMs pool end to end', () => {
  let e: E2e;
  let admin: DifferentlyClient;
  let tenant: DifferentlyClient;
  const fake = new LambdaMicrovmsFake({ images: [image], accessKeyId, pageSize: 2 });
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  beforeAll(async () => {
    process.env.AWS_ACCESS_KEY_ID = accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = 'e2e-secret-access-key-0123456789';
    await fake.start();
    e = await startE2e();
    admin = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.runtime.adminKey });
    tenant = new DifferentlyClient({ endpoint: e.runtime.url, apiKey: e.key });
  });

  afterAll(async () => {
    await e?.stop();
    await fake.stop();
    for (const [name, value] of [
      ['AWS_ACCESS_KEY_ID', saved.id],
      ['AWS_SECRET_ACCESS_KEY', saved.secret],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('creates, runs commands, streams, moves files, pauses, resumes and deletes, leaving no VM behind', async () => {
    const pool = await admin.admin.createPool({
      name: 'mvm',
      adapter: 'lambda-microvms',
      trust: 'private',
      maxConcurrency: 10,
      config: { image, region: 'us-east-1', endpoint: fake.url, pollIntervalMs: 20, readyTimeoutSeconds: 30 },
    });
    expect(pool).toMatchObject({ adapter: 'lambda-microvms', trust: 'private', health: { healthy: true } });
    expect(pool.features).toEqual(
      expect.arrayContaining(['exec', 'exec.stream', 'files', 'lifecycle.pause-resume', 'isolation.microvm']),
    );

    const created = await tenant.createSandbox({
      placement: { allowedPools: ['mvm'] },
      env: { WHO: 'microvm' },
      ttlSeconds: 1800,
    });
    const sandbox = await tenant.waitUntilRunning(created.id, { intervalMs: 20 });
    // One VM, named by the sandbox id as its idempotency token, living no longer than the sandbox's TTL.
    expect(fake.received.run).toEqual([
      expect.objectContaining({
        clientToken: sandbox.id,
        imageIdentifier: image,
        maximumDurationInSeconds: 1800,
      }),
    ]);
    const vm = [...fake.vms.values()][0];
    expect(vm?.state).toBe('RUNNING');

    expect(await tenant.exec(sandbox.id, { command: 'echo "$WHO"; exit 3' })).toMatchObject({
      exitCode: 3,
      stdout: 'microvm\n',
    });
    const out: string[] = [];
    for await (const event of tenant.execStream(sandbox.id, {
      command: 'for i in 1 2 3; do echo line$i; done',
    }))
      if ('data' in event) out.push(event.data);
    expect(out.join('')).toBe('line1\nline2\nline3\n');

    await tenant.writeFile(sandbox.id, '/work/notes.txt', 'kept across a suspend');
    expect((await tenant.listFiles(sandbox.id, '/work')).items.map((f) => f.name)).toEqual(['notes.txt']);

    expect((await tenant.pause(sandbox.id)).status).toBe('paused');
    expect(vm?.state).toBe('SUSPENDED');
    // A paused sandbox's VM is listed without a name; the reconciler knows it by its ref and leaves it.
    const whilePaused = (await admin.admin.reconcile()).pools.find((p) => p.pool === 'mvm');
    expect(whilePaused).toMatchObject({ listed: 1, orphansDeleted: 0, failed: 0 });
    expect((await tenant.getSandbox(sandbox.id)).status).toBe('paused');

    expect((await tenant.resume(sandbox.id)).status).toBe('running');
    expect(vm?.state).toBe('RUNNING');
    expect(new TextDecoder().decode(await tenant.readFile(sandbox.id, '/work/notes.txt'))).toBe(
      'kept across a suspend',
    );

    // The VM's lifetime was set at RunMicrovm: extending the TTL says the backstop stays (E0.20).
    const extended = await tenant.updateSandbox(sandbox.id, { ttlSeconds: 3600 });
    expect(extended.providerTtl).toMatchObject({ extended: false });

    await tenant.deleteSandbox(sandbox.id);
    await e.until(sandbox.id, 'terminated');
    await expect.poll(() => vm?.state).toBe('TERMINATED');
    expect((await admin.admin.reconcile()).pools.find((p) => p.pool === 'mvm')).toMatchObject({
      listed: 0,
      orphansDeleted: 0,
      failed: 0,
    });
    await expect.poll(() => [...fake.vms.values()].every((each) => each.state === 'TERMINATED')).toBe(true);

    const trust = await tenant.trust();
    const entry = trust.pools.find((p) => p.name === 'mvm');
    expect(entry).toMatchObject({ trust: 'private' });
    expect(entry?.limitations.join(' ')).toMatch(/lifetime is fixed when the VM starts/);
  });

  it('ends a sandbox at its TTL: the sweep expires it and its VM is terminated', async () => {
    const sandbox = await tenant.waitUntilRunning(
      (await tenant.createSandbox({ placement: { allowedPools: ['mvm'] }, ttlSeconds: 60 })).id,
      { intervalMs: 20 },
    );
    const vm = [...fake.vms.values()].find((each) => each.clientToken === sandbox.id);
    // The provider's own backstop is the same TTL.
    expect(vm?.maximumDurationInSeconds).toBe(60);
    const report = await sweep({ ...e.runtime.plane, now: () => new Date(Date.now() + 61_000) });
    expect(report.expired).toBe(1);
    await e.until(sandbox.id, 'terminated');
    await expect.poll(() => vm?.state).toBe('TERMINATED');
  });

  it("ends a VM of this installation that no sandbox holds, and leaves another installation's alone", async () => {
    const installation = await e.runtime.plane.store.installation();
    // Ours: a VM whose sandbox the store never recorded (a create whose record was lost).
    const orphan = await fake.runForeign(image, newId('sandbox'), installation);
    // Another installation's, on the same image.
    const theirs = await fake.runForeign(image, newId('sandbox'), 'inst_someone-else');
    const report = (await admin.admin.reconcile()).pools.find((p) => p.pool === 'mvm');
    expect(report).toMatchObject({ listed: 1, orphansDeleted: 1, failed: 0 });
    await expect.poll(() => orphan.state).toBe('TERMINATED');
    expect(theirs.state).toBe('RUNNING');
  });
});
