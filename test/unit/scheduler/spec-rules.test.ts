/**
 * Rules of the specification that a deliberate breakage once left unnoticed (issue #23). Each expected
 * value comes from the seeds or docs/store.md, never from the function under test.
 */
import { describe, expect, it } from 'vitest';
import { errors } from '../../../lib/errors.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { terminateSandbox } from '../../../lib/scheduler/terminate.ts';
import { testPlane } from '../../helpers/plane.ts';

/** A clock the test moves by hand. */
function clock(start = Date.parse('2026-12-03T00:00:00Z')) {
  let at = start;
  return { now: () => new Date(at), advance: (seconds: number) => (at += seconds * 1000) };
}

describe('the seeds’ rules', () => {
  it('E0.22 avoided: terminating a sandbox on a pool whose adapter kind this build lacks ends, with a note', async () => {
    const { plane, principal } = await testPlane();
    const at = new Date().toISOString();
    // Registered through the admin API by an older build; this build has no `firecracker` adapter.
    await plane.store.putPool(
      {
        name: 'legacy',
        adapter: 'firecracker',
        trust: 'private',
        maxConcurrency: 0,
        config: {},
        createdAt: at,
        updatedAt: at,
      },
      'create',
      { actor: 'admin', action: 'pool.created', target: 'legacy', details: {} },
    );
    await plane.pools.sync(true);
    const created = (await plane.sandboxes.create(principal, {})).sandbox;
    const record = await plane.store.getSandbox(principal.orgId, created.id);
    if (record === undefined) throw new Error('the sandbox is gone');
    await plane.store.updateSandbox(record, { status: 'terminating', pool: 'legacy', backendRef: 'vm-1' });

    const outcome = await terminateSandbox(plane, { sandboxId: created.id, orgId: principal.orgId }, 1);

    expect(outcome).toEqual({ kind: 'done' });
    const after = await plane.store.getSandbox(principal.orgId, created.id);
    expect(after?.status).toBe('terminated');
    expect(after?.statusMessage).toBe(
      'terminated; pool legacy has no adapter in this build, backend instance vm-1 was not deleted',
    );
  });

  it('a paused sandbox keeps its cpu and memory reserved; a stopped one releases them and keeps its disk', async () => {
    const { plane, principal } = await testPlane();
    const sandbox = (
      await plane.sandboxes.create(principal, { resources: { cpu: 2, memoryMiB: 2048, diskGiB: 10 } })
    ).sandbox;
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    // docs/store.md: provisioning, running and paused hold cpu, memory and disk; stopped holds disk only.
    const running = { cpu: 2, memoryMiB: 2048, diskGiB: 10, sandboxes: 1 };
    expect(await plane.store.getUsage(principal.orgId)).toMatchObject(running);
    await plane.operations.lifecycle(principal, sandbox.id, 'pause');
    await expectStatus(plane, principal.orgId, sandbox.id, 'paused');
    expect(await plane.store.getUsage(principal.orgId)).toMatchObject(running);
    await plane.operations.lifecycle(principal, sandbox.id, 'resume');
    await expectStatus(plane, principal.orgId, sandbox.id, 'running');
    await plane.operations.lifecycle(principal, sandbox.id, 'stop');
    await expectStatus(plane, principal.orgId, sandbox.id, 'stopped');
    expect(await plane.store.getUsage(principal.orgId)).toMatchObject({
      cpu: 0,
      memoryMiB: 0,
      diskGiB: 10,
      sandboxes: 1,
    });
  });

  it('start keeps the expiry the TTL set: a stop and a start do not extend a sandbox’s life', async () => {
    const { plane, principal } = await testPlane();
    const sandbox = (await plane.sandboxes.create(principal, { ttlSeconds: 3600 })).sandbox;
    await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    const expiresAt = (await plane.store.getSandbox(principal.orgId, sandbox.id))?.expiresAt;
    expect(expiresAt).not.toBeNull();
    await plane.operations.lifecycle(principal, sandbox.id, 'stop');
    await expectStatus(plane, principal.orgId, sandbox.id, 'stopped');
    await plane.operations.lifecycle(principal, sandbox.id, 'start');
    await expectStatus(plane, principal.orgId, sandbox.id, 'running');
    expect((await plane.store.getSandbox(principal.orgId, sandbox.id))?.expiresAt).toBe(expiresAt);
  });

  it('a sandbox still queued past its queueTimeoutSeconds fails with the reason, at its next look', async () => {
    const time = clock();
    const { plane, principal } = await testPlane({ now: time.now });
    const org = await plane.tenancy.createOrg({ name: 'one-slot', quota: { maxSandboxes: 1 } });
    const small = { ...principal, orgId: org.id };
    const first = (await plane.sandboxes.create(small, {})).sandbox;
    await provisionSandbox(plane, { sandboxId: first.id, orgId: org.id }, 1);
    const waiting = (await plane.sandboxes.create(small, { queueTimeoutSeconds: 60 })).sandbox;
    expect((await provisionSandbox(plane, { sandboxId: waiting.id, orgId: org.id }, 1)).kind).toBe('retry');
    time.advance(59);
    expect((await provisionSandbox(plane, { sandboxId: waiting.id, orgId: org.id }, 2)).kind).toBe('retry');
    time.advance(2);
    expect(await provisionSandbox(plane, { sandboxId: waiting.id, orgId: org.id }, 3)).toEqual({
      kind: 'done',
    });
    const failed = await plane.store.getSandbox(org.id, waiting.id);
    expect(failed?.status).toBe('failed');
    expect(failed?.statusMessage).toBe('queue timeout: not placed within 60 s');
  });

  it('fork takes a memory snapshot of a running parent on a pool that offers snapshots.memory, a disk one of a stopped parent', async () => {
    const { plane, principal } = await testPlane();
    const parent = (await plane.sandboxes.create(principal, {})).sandbox;
    await provisionSandbox(plane, { sandboxId: parent.id, orgId: principal.orgId });
    expect(plane.pools.featuresOf('first')).toContain('snapshots.memory');
    const child = await plane.operations.fork(principal, parent.id);
    const fromRunning = await plane.store.getSnapshot(
      principal.orgId,
      (await childSnapshot(plane, principal.orgId, child.id)) ?? '',
    );
    expect(fromRunning?.kind).toBe('memory');

    await plane.operations.lifecycle(principal, parent.id, 'stop');
    await expectStatus(plane, principal.orgId, parent.id, 'stopped');
    const second = await plane.operations.fork(principal, parent.id);
    const fromStopped = await plane.store.getSnapshot(
      principal.orgId,
      (await childSnapshot(plane, principal.orgId, second.id)) ?? '',
    );
    expect(fromStopped?.kind).toBe('disk');
  });
});

describe('more rules the suites did not hold', () => {
  it('an unknown error from Create counts as provider_unavailable: the pool goes down and the attempt counts', async () => {
    const { plane, adapters, principal } = await testPlane();
    const sandbox = (await plane.sandboxes.create(principal, { placement: { allowedPools: ['first'] } }))
      .sandbox;
    // Not the contract's error: what a broken adapter or a crashed client library throws.
    adapters.first.inject('create', { error: new Error('socket hang up') });
    const outcome = await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
    expect(outcome.kind).toBe('retry');
    const record = await plane.store.getSandbox(principal.orgId, sandbox.id);
    expect(record).toMatchObject({
      status: 'queued',
      attempts: 1,
      statusMessage: 'pool first unavailable: socket hang up; retrying (attempt 1 of 3)',
    });
    await plane.pools.sync(true);
    expect(plane.pools.health('first')).toMatchObject({ healthy: false });
  });

  it('snapshots a stopped sandbox and a paused one, as the seeds allow', async () => {
    const { plane, principal } = await testPlane();
    for (const action of ['stop', 'pause'] as const) {
      const sandbox = (await plane.sandboxes.create(principal, {})).sandbox;
      await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
      await plane.operations.lifecycle(principal, sandbox.id, action);
      await expectStatus(plane, principal.orgId, sandbox.id, action === 'stop' ? 'stopped' : 'paused');
      const { value } = await plane.operations.snapshot(principal, sandbox.id, 'disk');
      await waitUntil(
        async () => (await plane.store.getSnapshot(principal.orgId, value.id))?.status === 'ready',
      );
      expect((await plane.store.getSnapshot(principal.orgId, value.id))?.status).toBe('ready');
    }
  });

  it('waits for capacity on every receive without counting an attempt, looking again sooner than a minute', async () => {
    const { plane, adapters, principal } = await testPlane();
    const sandbox = (await plane.sandboxes.create(principal, {})).sandbox;
    for (const receive of [1, 2, 5]) {
      adapters.first.inject('create', { error: insufficient() });
      adapters.second.inject('create', { error: insufficient() });
      const outcome = await provisionSandbox(
        plane,
        { sandboxId: sandbox.id, orgId: principal.orgId },
        receive,
      );
      // The seeds' capacity retry: 2 s, growing with the receives (2 x receive count), never failing it.
      expect(outcome).toEqual({ kind: 'retry', delaySeconds: 2 * receive });
      expect(await plane.store.getSandbox(principal.orgId, sandbox.id)).toMatchObject({
        status: 'queued',
        attempts: 0,
        waitingFor: 'capacity',
      });
    }
  });
});

function insufficient() {
  return errors.insufficientCapacity('node full');
}

type Plane = Awaited<ReturnType<typeof testPlane>>['plane'];

/** Polls until `condition` holds; the 20 s bound is a safety net for a busy machine, not a timing. */
async function waitUntil(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition()) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Waits (on the operations worker the test plane runs) until the sandbox reaches `status`. */
async function expectStatus(plane: Plane, orgId: string, id: string, status: string): Promise<void> {
  await waitUntil(async () => (await plane.store.getSandbox(orgId, id))?.status === status);
  expect((await plane.store.getSandbox(orgId, id))?.status).toBe(status);
}

/** The snapshot a forked child restores from. */
async function childSnapshot(plane: Plane, orgId: string, childId: string): Promise<string | undefined> {
  return (await plane.store.getSandbox(orgId, childId))?.fromSnapshot ?? undefined;
}
