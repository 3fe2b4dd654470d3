/**
 * The provision worker's paths that the first suite (provision.test.ts) leaves out, each with what the
 * specification and docs/scheduler.md say the sandbox then shows. Mutation testing (npm run mutate)
 * pointed at them.
 */
import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { errors } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import { silentLog } from '../../../lib/log.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { memoryStore } from '../../../lib/store/memory.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { SandboxRecord, SnapshotRecord } from '../../../lib/store/records.ts';
import { RecordingQueue, testPlane } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/** A plane whose two fake pools take one sandbox each (maxConcurrency 1). */
async function boundedPlane() {
  const adapters = { first: new FakeAdapter(), second: new FakeAdapter() };
  const config = parseConfig({
    devMode: true,
    pools: [
      { name: 'first', adapter: 'fake', maxConcurrency: 1 },
      { name: 'second', adapter: 'fake', maxConcurrency: 1 },
    ],
  });
  const store = memoryStore();
  const plane = createControlPlane({
    config,
    store,
    queue: new RecordingQueue(),
    pools: await buildPools(config, { log: silentLog, adapters, store }),
    log: silentLog,
  });
  const org = await plane.tenancy.createOrg({ name: 'bounded' });
  return { plane, adapters, principal: orgPrincipal(org.id) };
}

async function stored(plane: { store: Store }, orgId: string, id: string) {
  const record = await plane.store.getSandbox(orgId, id);
  if (record === undefined) throw new Error(`sandbox ${id} is gone`);
  return record;
}

describe('the provision worker, path by path', () => {
  it('acknowledges a message for a sandbox that does not exist', async () => {
    const { plane, principal, adapters } = await testPlane();
    expect(
      await provisionSandbox(plane, { sandboxId: 'sbx_01J00000000000000000000000', orgId: principal.orgId }),
    ).toEqual({
      kind: 'done',
    });
    expect(adapters.first.calls.get('create') ?? 0).toBe(0);
  });

  it('acknowledges a message for a sandbox already past provisioning, touching nothing', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    const running = await stored(plane, principal.orgId, sandbox.id);
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'done',
    });
    expect(await stored(plane, principal.orgId, sandbox.id)).toEqual(running);
    expect(adapters.first.calls.get('create')).toBe(1);
  });

  it('fails a sandbox whose queue deadline passed, naming the deadline, without a Create', async () => {
    let now = Date.parse('2026-12-03T10:00:00Z');
    const { plane, principal, adapters } = await testPlane({ now: () => new Date(now) });
    const { sandbox } = await plane.sandboxes.create(principal, { queueTimeoutSeconds: 30 });
    now += 31_000;
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'done',
    });
    expect(await stored(plane, principal.orgId, sandbox.id)).toMatchObject({
      status: 'failed',
      statusMessage: 'queue timeout: not placed within 30 s',
    });
    expect(adapters.first.calls.get('create') ?? 0).toBe(0);
  });

  it('places a sandbox whose deadline has not passed yet, at the very deadline too', async () => {
    let now = Date.parse('2026-12-03T10:00:00Z');
    const { plane, principal } = await testPlane({ now: () => new Date(now) });
    const { sandbox } = await plane.sandboxes.create(principal, { queueTimeoutSeconds: 30 });
    now += 30_000;
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect((await stored(plane, principal.orgId, sandbox.id)).status).toBe('running');
  });

  it('fails, once, a sandbox that the pools changed since admission can never run, with each pool’s reason', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    // Narrowed by hand to a pool that does not exist: nothing permitted can ever run it.
    const record = await stored(plane, principal.orgId, sandbox.id);
    await plane.store.updateSandbox(record, { allowedPools: ['gone'] });
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'done',
    });
    const failed = await stored(plane, principal.orgId, sandbox.id);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).not.toBeNull();
    expect(failed.placement.pool).toBeNull();
    expect(failed.placement.decidedAt).not.toBeNull();
  });

  it('waits for a pool while every permitted pool is down, typed, looking again sooner on early receives', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    await plane.pools.markDown('first', 'refused');
    await plane.pools.markDown('second', 'refused');
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }, 3)).toEqual({
      kind: 'retry',
      delaySeconds: 6,
    });
    const waiting = await stored(plane, principal.orgId, sandbox.id);
    expect(waiting).toMatchObject({ status: 'queued', waitingFor: 'pool', attempts: 0 });
    expect(waiting.statusMessage).toMatch(/^waiting for a pool: /);
    expect(adapters.first.calls.get('create') ?? 0).toBe(0);
    // A wake that still finds no pool is acknowledged: the sandbox's own message keeps its place.
    expect(
      await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId, wake: true }),
    ).toEqual({ kind: 'done' });
  });

  it('fails a waiting sandbox whose org quota was lowered below it: it can never run', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {
      resources: { cpu: 2, memoryMiB: 1024, diskGiB: 10 },
    });
    await plane.tenancy.setQuota(principal.orgId, { maxCPU: 1 });
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'done',
    });
    expect(await stored(plane, principal.orgId, sandbox.id)).toMatchObject({
      status: 'failed',
      statusMessage: "this sandbox can never run: cpu 2 is more than the org's quota of 1",
    });
  });

  it('moves to the next pool when one is at its concurrency limit, and waits typed when all are', async () => {
    const { plane, principal } = await boundedPlane();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await plane.sandboxes.create(principal, {})).sandbox.id);
    const [a, b, c] = ids as [string, string, string];
    await provisionSandbox(plane, { sandboxId: a, orgId: principal.orgId });
    await provisionSandbox(plane, { sandboxId: b, orgId: principal.orgId });
    expect((await stored(plane, principal.orgId, a)).pool).toBe('first');
    const second = await stored(plane, principal.orgId, b);
    expect(second.pool).toBe('second');
    expect(second.placement.rejected).toEqual([
      { pool: 'first', reason: 'at maxConcurrency (1 of 1 active)' },
    ]);

    expect(await provisionSandbox(plane, { sandboxId: c, orgId: principal.orgId }, 2)).toEqual({
      kind: 'retry',
      delaySeconds: 4,
    });
    const waiting = await stored(plane, principal.orgId, c);
    expect(waiting).toMatchObject({ status: 'queued', waitingFor: 'capacity', attempts: 0, pool: null });
    expect(waiting.statusMessage).toBe(
      'waiting for capacity: first: at maxConcurrency (1 of 1 active); second: at maxConcurrency (1 of 1 active)',
    );
  });

  it('waits for capacity when a healthy pool is full and the other down; for a pool when all are down', async () => {
    const { plane, principal } = await boundedPlane();
    const a = (await plane.sandboxes.create(principal, {})).sandbox.id;
    const b = (await plane.sandboxes.create(principal, {})).sandbox.id;
    await provisionSandbox(plane, { sandboxId: a, orgId: principal.orgId });
    await plane.pools.markDown('second', 'refused');
    await provisionSandbox(plane, { sandboxId: b, orgId: principal.orgId });
    const waiting = await stored(plane, principal.orgId, b);
    expect(waiting.waitingFor).toBe('capacity');
    expect(waiting.statusMessage).toMatch(
      /^waiting for capacity: first: at maxConcurrency \(1 of 1 active\); second: unhealthy: .*refused$/,
    );
    await plane.pools.markDown('first', 'refused');
    await provisionSandbox(plane, { sandboxId: b, orgId: principal.orgId });
    expect((await stored(plane, principal.orgId, b)).waitingFor).toBe('pool');
  });

  it('takes the next pool when the store refuses a slot placement thought free (a race), and waits when none is', async () => {
    const { plane, principal } = await boundedPlane();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await plane.sandboxes.create(principal, {})).sandbox.id);
    const [a, b, c] = ids as [string, string, string];
    await provisionSandbox(plane, { sandboxId: a, orgId: principal.orgId });
    // Placement reads no active slots (as a placement racing another would); the store still counts them.
    plane.store.getPoolUsage = async () => 0;
    await provisionSandbox(plane, { sandboxId: b, orgId: principal.orgId });
    const second = await stored(plane, principal.orgId, b);
    expect(second).toMatchObject({ status: 'running', pool: 'second' });
    expect(second.placement.rejected).toEqual([
      { pool: 'first', reason: 'pool first is at its concurrency limit of 1' },
    ]);
    expect(await provisionSandbox(plane, { sandboxId: c, orgId: principal.orgId })).toEqual({
      kind: 'retry',
      delaySeconds: 2,
    });
    expect(await stored(plane, principal.orgId, c)).toMatchObject({
      status: 'queued',
      waitingFor: 'capacity',
      pool: null,
      statusMessage:
        'waiting for capacity: first: pool first is at its concurrency limit of 1; second: pool second is at its concurrency limit of 1',
    });
  });

  it('asks the backend for the sandbox as requested: template, resources, env, ttl and ownership labels', async () => {
    const { plane, principal, adapters } = await testPlane();
    const project = await plane.tenancy.createProject(principal.orgId, { name: 'p' });
    const { sandbox } = await plane.sandboxes.create(principal, {
      template: 'python:3.12',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 5 },
      env: { A: '1' },
      labels: { team: 'x' },
      ttlSeconds: 600,
      projectId: project.id,
    });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    const [request] = adapters.first.createRequests;
    expect(request).toMatchObject({
      id: sandbox.id,
      installation: await plane.store.installation(),
      template: 'python:3.12',
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 5 },
      env: { A: '1' },
      ttlSeconds: 600,
    });
    expect(request?.labels).toMatchObject({
      team: 'x',
      'differently.dev/org': principal.orgId,
      'differently.dev/project': project.id,
    });
    expect(request !== undefined && 'fromSnapshot' in request).toBe(false);
  });

  it('leaves out the template and the project label when the sandbox has none', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    const [request] = adapters.first.createRequests;
    expect(request && 'template' in request).toBe(false);
    expect(request?.labels).not.toHaveProperty('differently.dev/project');
  });

  it('fails, once, a sandbox whose capabilities no permitted pool offers any more', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const record = await stored(plane, principal.orgId, sandbox.id);
    await plane.store.updateSandbox(record, { capabilities: ['gpu'] });
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'done',
    });
    const failed = await stored(plane, principal.orgId, sandbox.id);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toMatch(/^no permitted pool offers the requested capabilities/);
  });

  it('shows the pool it is provisioning on while the backend creates it', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const create = adapters.first.create.bind(adapters.first);
    let during: SandboxRecord | undefined;
    adapters.first.create = async (request, options) => {
      during = await stored(plane, principal.orgId, sandbox.id);
      return create(request, options);
    };
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect(during).toMatchObject({
      status: 'provisioning',
      pool: 'first',
      statusMessage: 'provisioning on first',
    });
  });

  it("gives the backend a deadline a little before the scheduler's own (5 s, or a tenth of a short one)", async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const create = adapters.first.create.bind(adapters.first);
    let deadline = 0;
    adapters.first.create = async (request, options) => {
      deadline = options?.deadline ?? 0;
      return create(request, options);
    };
    const before = Date.now();
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    // provisionTimeoutSeconds defaults to 120: the backend must answer within 115 s.
    expect(deadline).toBeGreaterThanOrEqual(before + 115_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 115_000);
  });

  it('moves a sandbox provisioning on a pool that went down to another, giving the first its slot back', async () => {
    const { plane, principal } = await boundedPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const queued = await stored(plane, principal.orgId, sandbox.id);
    // Left provisioning on `second` (its slot taken) by a worker that died; `second` is down since.
    await plane.store.updateSandbox(queued, { status: 'provisioning', pool: 'second' }, { poolLimit: 1 });
    expect(await plane.store.getPoolUsage('second')).toBe(1);
    await plane.pools.markDown('second', 'refused');
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect(await stored(plane, principal.orgId, sandbox.id)).toMatchObject({
      status: 'running',
      pool: 'first',
    });
    expect(await plane.store.getPoolUsage('second')).toBe(0);
    expect(await plane.store.getPoolUsage('first')).toBe(1);
  });

  it('places a queued sandbox by ranking, whatever pool an earlier attempt left on its record', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const queued = await stored(plane, principal.orgId, sandbox.id);
    await plane.store.updateSandbox(queued, { pool: 'second' });
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect((await stored(plane, principal.orgId, sandbox.id)).pool).toBe('first');
  });

  it('lets a store failure that is not a lost race propagate (the message is redelivered), at activation and at running', async () => {
    for (const failOn of ['provisioning', 'running'] as const) {
      const { plane, principal } = await testPlane();
      const { sandbox } = await plane.sandboxes.create(principal, {});
      const update = plane.store.updateSandbox.bind(plane.store);
      plane.store.updateSandbox = async (current, patch, options) => {
        if (patch.status === failOn) throw new Error('the table is gone');
        return update(current, patch, options);
      };
      await expect(
        provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }),
      ).rejects.toThrow('the table is gone');
      plane.store.updateSandbox = async (current, patch, options) => {
        if (patch.status === failOn) throw errors.providerUnavailable('throttled');
        return update(current, patch, options);
      };
      await expect(
        provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId }),
      ).rejects.toThrow('throttled');
    }
  });

  it('looks again shortly when activation loses a race to another writer', async () => {
    const { plane, principal } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const update = plane.store.updateSandbox.bind(plane.store);
    plane.store.updateSandbox = async (current, patch, options) => {
      if (patch.status === 'provisioning') throw errors.conflict('another writer got there first');
      return update(current, patch, options);
    };
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'retry',
      delaySeconds: 1,
    });
    expect(await stored(plane, principal.orgId, sandbox.id)).toMatchObject({
      status: 'queued',
      waitingFor: null,
    });
  });

  describe('a restore from a snapshot', () => {
    /** A snapshot record of a running parent on pool first, creating; `ready` takes one on the backend. */
    async function withSnapshot() {
      const setup = await testPlane();
      const { plane, principal, adapters } = setup;
      const parent = (await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } }))
        .sandbox;
      await provisionSandbox(plane, { sandboxId: parent.id, orgId: principal.orgId });
      const at = new Date().toISOString();
      const snapshot: SnapshotRecord = {
        id: newId('snapshot'),
        orgId: principal.orgId,
        projectId: null,
        sandboxId: parent.id,
        pool: 'first',
        backendRef: '',
        kind: 'disk',
        sizeBytes: 0,
        status: 'creating',
        statusMessage: null,
        createdAt: at,
        updatedAt: at,
      };
      const audit = { actor: 'test', action: 'snapshot.settled', target: snapshot.id, details: {} };
      await plane.store.createSnapshot(snapshot, audit);
      const child = (await plane.sandboxes.create(principal, { fromSnapshot: snapshot.id })).sandbox;
      const settle = async (patch: { status: 'ready' | 'failed'; statusMessage: string | null }) => {
        const backendRef =
          patch.status === 'ready'
            ? (
                await adapters.first.snapshot(
                  (await stored(plane, principal.orgId, parent.id)).backendRef ?? '',
                  'disk',
                )
              ).ref
            : '';
        await plane.store.settleSnapshot(snapshot, { ...patch, backendRef, updatedAt: at }, audit);
        return backendRef;
      };
      return { ...setup, snapshot, child, settle };
    }

    it('waits, uncounted and typed, while the snapshot is being taken', async () => {
      const { plane, principal, snapshot, child } = await withSnapshot();
      expect(await provisionSandbox(plane, { sandboxId: child.id, orgId: principal.orgId })).toEqual({
        kind: 'retry',
        delaySeconds: 2,
      });
      expect(await stored(plane, principal.orgId, child.id)).toMatchObject({
        status: 'queued',
        waitingFor: 'snapshot',
        attempts: 0,
        statusMessage: `waiting for snapshot ${snapshot.id} to be ready`,
      });
    });

    it('hands the backend its own ref for our snapshot once ready', async () => {
      const { plane, principal, adapters, child, settle } = await withSnapshot();
      const ref = await settle({ status: 'ready', statusMessage: null });
      await provisionSandbox(plane, { sandboxId: child.id, orgId: principal.orgId });
      expect(adapters.first.createRequests.at(-1)?.fromSnapshot).toBe(ref);
      expect((await stored(plane, principal.orgId, child.id)).status).toBe('running');
    });

    it('fails when the snapshot failed, with its reason', async () => {
      const { plane, principal, snapshot, child, settle } = await withSnapshot();
      await settle({ status: 'failed', statusMessage: 'disk full' });
      expect(await provisionSandbox(plane, { sandboxId: child.id, orgId: principal.orgId })).toEqual({
        kind: 'done',
      });
      expect(await stored(plane, principal.orgId, child.id)).toMatchObject({
        status: 'failed',
        statusMessage: `snapshot ${snapshot.id} failed: disk full`,
      });
    });

    it('fails when the snapshot was deleted before the restore', async () => {
      const { plane, principal, snapshot, child, settle } = await withSnapshot();
      await settle({ status: 'ready', statusMessage: null });
      await plane.store.deleteSnapshot(principal.orgId, snapshot.id, {
        actor: 'test',
        action: 'snapshot.deleted',
        target: snapshot.id,
        details: {},
      });
      expect(await provisionSandbox(plane, { sandboxId: child.id, orgId: principal.orgId })).toEqual({
        kind: 'done',
      });
      expect(await stored(plane, principal.orgId, child.id)).toMatchObject({
        status: 'failed',
        statusMessage: `snapshot ${snapshot.id} was deleted before the sandbox could be restored from it`,
      });
    });
  });

  it('counts a Create that outlives the provision timeout as the sandbox failing, and keeps the pool healthy', async () => {
    const adapters = { first: new FakeAdapter({ delaysMs: { create: 60_000 } }) };
    const config = parseConfig({
      devMode: true,
      pools: [{ name: 'first', adapter: 'fake' }],
      scheduler: { provisionTimeoutSeconds: 5 },
    });
    const store = memoryStore();
    const plane = createControlPlane({
      config,
      store,
      queue: new RecordingQueue(),
      pools: await buildPools(config, { log: silentLog, adapters, store }),
      log: silentLog,
    });
    const org = await plane.tenancy.createOrg({ name: 'slow' });
    const principal = orgPrincipal(org.id);
    const { sandbox } = await plane.sandboxes.create(principal, {});
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'retry',
      delaySeconds: 4,
    });
    const record: SandboxRecord = await stored(plane, principal.orgId, sandbox.id);
    expect(record).toMatchObject({ status: 'queued', attempts: 1 });
    expect(record.statusMessage).toMatch(/^sandbox failed on first: .*; retrying \(attempt 1 of 3\)$/);
    expect(plane.pools.isHealthy('first')).toBe(true);
  });

  it('retries shortly when another writer changed the record mid-way', async () => {
    const { plane, principal, adapters } = await testPlane();
    const { sandbox } = await plane.sandboxes.create(principal, {});
    const original = adapters.first.create.bind(adapters.first);
    adapters.first.create = async (request) => {
      const instance = await original(request);
      // A label change lands while Create runs: the running write loses the race.
      const current = await stored(plane, principal.orgId, sandbox.id);
      await plane.store.updateSandbox(current, { labels: { moved: 'yes' } });
      return instance;
    };
    expect(await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId })).toEqual({
      kind: 'retry',
      delaySeconds: 1,
    });
    adapters.first.create = original;
    // The redelivery finds it provisioning on first and reuses the instance: one in all.
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect((await stored(plane, principal.orgId, sandbox.id)).status).toBe('running');
    expect(adapters.first.instanceCount()).toBe(1);
  });
});
