/**
 * The tenant-facing sandbox service (lib/sandboxes/service.ts) on the memory store: what each call does
 * to the record, the queue and the audit chain, with expected values from the API reference in the
 * README and docs (never from the service itself). Mutation testing pointed at what the HTTP suites,
 * outside its loop, were the only ones to hold.
 */
import { describe, expect, it } from 'vitest';
import { errors } from '../../../lib/errors.ts';
import { idempotencyWindowSeconds, retryOnConflict } from '../../../lib/sandboxes/service.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import type { SandboxRecord } from '../../../lib/store/records.ts';
import { withReadAlong } from '../../../lib/store/request-reads.ts';
import { testPlane } from '../../helpers/plane.ts';

const start = Date.parse('2026-12-03T12:00:00.000Z');

async function running(overrides: Parameters<typeof testPlane>[0] = {}) {
  const setup = await testPlane({ now: () => new Date(start), ...overrides });
  const { plane, principal } = setup;
  const { sandbox } = await plane.sandboxes.create(principal, { labels: { team: 'a' } });
  await provisionSandbox(plane, { sandboxId: sandbox.id, orgId: principal.orgId });
  return { ...setup, id: sandbox.id };
}

async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return 'none';
  } catch (error) {
    return (error as { code?: string }).code ?? 'not an ApiError';
  }
}

describe('retryOnConflict', () => {
  it('runs again on conflict up to 3 times, and rethrows anything else at once', async () => {
    let calls = 0;
    await expect(
      retryOnConflict(async () => {
        calls++;
        throw errors.conflict('lost');
      }),
    ).rejects.toMatchObject({ code: 'conflict' });
    expect(calls).toBe(3);
    calls = 0;
    expect(
      await retryOnConflict(async () => {
        calls++;
        if (calls < 3) throw errors.conflict('lost');
        return 'third time';
      }),
    ).toBe('third time');
    calls = 0;
    await expect(
      retryOnConflict(async () => {
        calls++;
        throw errors.invalidState('no');
      }),
    ).rejects.toMatchObject({ code: 'invalid_state' });
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      retryOnConflict(async () => {
        calls++;
        throw new Error('plain');
      }),
    ).rejects.toThrow('plain');
    expect(calls).toBe(1);
  });
});

describe('create', () => {
  it('records a queued sandbox, sends one provision message, and audits who created it', async () => {
    const { plane, principal, queue } = await testPlane({ now: () => new Date(start) });
    const { sandbox, replayed } = await plane.sandboxes.create(principal, { template: 'python' });
    expect(replayed).toBe(false);
    expect(sandbox).toMatchObject({
      status: 'queued',
      waitingFor: null,
      pool: null,
      template: 'python',
      attempts: 0,
      placement: { pool: null, rejected: [], decidedAt: null },
      createdAt: new Date(start).toISOString(),
      expiresAt: null,
    });
    expect(queue.sent).toEqual([
      { queue: 'provision', message: { sandboxId: sandbox.id, orgId: principal.orgId } },
    ]);
    await plane.store.linkAudit(principal.orgId);
    const events = (await plane.store.listAudit(principal.orgId, { limit: 10 })).items;
    expect(events.at(-1)).toMatchObject({
      actor: principal.keyId,
      action: 'sandbox.created',
      target: sandbox.id,
      details: { projectId: null, template: 'python', resources: sandbox.resources },
    });
  });

  it('replays a repeat with the same Idempotency-Key and body, sends nothing more, and refuses another body', async () => {
    const { plane, principal, queue } = await testPlane({ now: () => new Date(start) });
    const first = await plane.sandboxes.create(principal, { labels: { a: '1' } }, 'once');
    const again = await plane.sandboxes.create(principal, { labels: { a: '1' } }, 'once');
    expect(again).toEqual({ sandbox: first.sandbox, replayed: true });
    expect(queue.sent).toHaveLength(1);
    expect(await codeOf(plane.sandboxes.create(principal, { labels: { a: '2' } }, 'once'))).toBe('conflict');
    // Another project's key with the same Idempotency-Key makes its own sandbox.
    const project = await plane.tenancy.createProject(principal.orgId, { name: 'p' });
    const other = await plane.sandboxes.create(
      { ...principal, projectId: project.id },
      { labels: { a: '1' } },
      'once',
    );
    expect(other.replayed).toBe(false);
    expect(other.sandbox.id).not.toBe(first.sandbox.id);
  });

  it('remembers an Idempotency-Key for 24 hours', () => {
    expect(idempotencyWindowSeconds).toBe(86_400);
  });

  it('keeps the sandbox queued when the message cannot be sent (the sweep requeues it)', async () => {
    const { plane, principal, queue } = await testPlane();
    queue.failSends = true;
    const { sandbox } = await plane.sandboxes.create(principal, {});
    expect((await plane.store.getSandbox(principal.orgId, sandbox.id))?.status).toBe('queued');
  });

  it('refuses a create past the org’s maxQueued waiting sandboxes', async () => {
    const { plane, principal } = await testPlane();
    await plane.tenancy.setQuota(principal.orgId, { maxQueued: 1 });
    await plane.sandboxes.create(principal, {});
    expect(await codeOf(plane.sandboxes.create(principal, {}))).toBe('quota_exceeded');
  });
});

describe('list and get', () => {
  it("scopes a project key's listing to its project, whatever project filter it sends", async () => {
    const { plane, principal } = await testPlane();
    const project = await plane.tenancy.createProject(principal.orgId, { name: 'p' });
    const scoped = { ...principal, projectId: project.id };
    const inside = (await plane.sandboxes.create(scoped, {})).sandbox;
    const outside = (await plane.sandboxes.create(principal, {})).sandbox;
    const ids = async (who: typeof principal, projectId?: string) =>
      (await plane.sandboxes.list(who, { projectId }, { limit: 10 })).items.map((s) => s.id).sort();
    expect(await ids(scoped)).toEqual([inside.id]);
    expect(await ids(scoped, undefined)).toEqual([inside.id]);
    expect(await ids(principal)).toEqual([inside.id, outside.id].sort());
    expect(await ids(principal, project.id)).toEqual([inside.id]);
    const page = await plane.sandboxes.list(principal, {}, { limit: 1 });
    expect(page.items).toHaveLength(1);
    expect(page.nextCursor).not.toBeNull();
    expect(await codeOf(plane.sandboxes.get(scoped, outside.id))).toBe('not_found');
  });
});

describe('update (PATCH)', () => {
  it('replaces the tenant’s labels and keeps the control plane’s own, audited', async () => {
    const { plane, principal, id } = await running();
    const record = await plane.store.getSandbox(principal.orgId, id);
    if (record === undefined) throw new Error('gone');
    await plane.store.updateSandbox(record, {
      labels: { team: 'a', 'differently.dev/forked-from': 'sbx_x' },
    });
    const updated = await plane.sandboxes.update(principal, id, { labels: { owner: 'b' } });
    expect(updated.labels).toEqual({ owner: 'b', 'differently.dev/forked-from': 'sbx_x' });
    expect(updated).not.toHaveProperty('providerTtl');
    await plane.store.linkAudit(principal.orgId);
    const last = (await plane.store.listAudit(principal.orgId, { limit: 100 })).items.at(-1);
    expect(last).toMatchObject({ action: 'sandbox.updated', target: id, details: { labels: true } });
  });

  it('resets expiresAt from now for a new TTL and moves the backend’s own lifetime where it can', async () => {
    const { plane, principal, id, adapters } = await running();
    const updated = await plane.sandboxes.update(principal, id, { ttlSeconds: 600 });
    expect(updated.ttlSeconds).toBe(600);
    expect(updated.expiresAt).toBe(new Date(start + 600_000).toISOString());
    expect(updated.providerTtl).toEqual({ extended: true, note: 'the backend lifetime was moved too' });
    const ref = (await plane.store.getSandbox(principal.orgId, id))?.backendRef ?? '';
    expect(adapters.first.backstops.get(ref)).toBe(600);
    await plane.store.linkAudit(principal.orgId);
    const last = (await plane.store.listAudit(principal.orgId, { limit: 100 })).items.at(-1);
    expect(last).toMatchObject({ action: 'sandbox.updated', details: { ttlSeconds: 600, labels: false } });
  });

  it('says when the backend’s lifetime cannot move, and when there is no instance yet', async () => {
    const { plane, principal, id, adapters } = await running();
    Object.defineProperty(adapters.first, 'extendTtl', { value: undefined });
    const fixed = await plane.sandboxes.update(principal, id, { ttlSeconds: 600 });
    expect(fixed.providerTtl?.extended).toBe(false);
    expect(fixed.providerTtl?.note).toMatch(
      /^the fake backend's own lifetime was set at creation and cannot be moved/,
    );
    const queued = (await plane.sandboxes.create(principal, {})).sandbox;
    const early = await plane.sandboxes.update(principal, queued.id, { ttlSeconds: 600 });
    expect(early.expiresAt).toBeNull();
    expect(early.providerTtl).toEqual({
      extended: false,
      note: 'no backend instance yet: the backend gets this TTL when it is created',
    });
  });

  it('refuses a new TTL for a sandbox terminating or ended, naming its status', async () => {
    const { plane, principal, id } = await running();
    await plane.sandboxes.delete(principal, id);
    const refused = plane.sandboxes.update(principal, id, { ttlSeconds: 600 });
    await expect(refused).rejects.toMatchObject({
      code: 'invalid_state',
      message: 'the TTL of a terminating sandbox cannot change',
      details: { status: 'terminating' },
    });
    // Labels still change.
    expect((await plane.sandboxes.update(principal, id, { labels: { x: 'y' } })).labels).toEqual({ x: 'y' });
  });
});

describe('delete', () => {
  it('moves to terminating once, sends one terminate message, and answers a repeat with the same record', async () => {
    const { plane, principal, id, queue } = await running();
    queue.sent.length = 0;
    const first = await plane.sandboxes.delete(principal, id);
    expect(first).toMatchObject({ status: 'terminating', statusMessage: 'termination requested' });
    const again = await plane.sandboxes.delete(principal, id);
    expect(again).toEqual(first);
    expect(queue.sent.filter((s) => s.queue === 'terminate')).toEqual([
      { queue: 'terminate', message: { sandboxId: id, orgId: principal.orgId } },
    ]);
  });

  it('does it again on the new version when a worker changed the sandbox in between', async () => {
    const { plane, principal, id } = await running();
    const update = plane.store.updateSandbox.bind(plane.store);
    let raced = false;
    plane.store.updateSandbox = async (current, patch, options) => {
      if (!raced && patch.status === 'terminating') {
        raced = true;
        await update(current, { labels: { changed: 'by a worker' } });
      }
      return update(current, patch, options);
    };
    expect((await plane.sandboxes.delete(principal, id)).status).toBe('terminating');
    expect(raced).toBe(true);
  });
});

describe('exec', () => {
  it('refuses a timeout longer than the synchronous exec allows, pointing at the streamed one', async () => {
    const { plane, principal, id } = await running();
    await expect(
      plane.sandboxes.exec(principal, id, { command: 'true', timeoutSeconds: 26 }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      message:
        'timeoutSeconds 26 is longer than the synchronous exec allows (25 s): use POST /v1/sandboxes/{id}/exec?stream=1 for long commands',
      details: { field: 'timeoutSeconds', max: 25 },
    });
    expect(
      (await plane.sandboxes.exec(principal, id, { command: 'true', timeoutSeconds: 25 })).exitCode,
    ).toBe(0);
  });

  it('gives the backend the synchronous limit as the timeout when none is asked, and bounds the output', async () => {
    const { plane, principal, id, adapters } = await running();
    const asked: (number | undefined)[] = [];
    adapters.first.setExec((request) => {
      asked.push(request.timeoutSeconds);
      return {
        exitCode: 0,
        stdout: 'x'.repeat(2 * 1024 * 1024),
        stderr: '',
        durationMs: 1,
        truncated: false,
        timedOut: false,
      };
    });
    const result = await plane.sandboxes.exec(principal, id, { command: 'yes' });
    expect(asked).toEqual([25]);
    expect(result.stdout.length).toBe(1024 * 1024);
    expect(result.truncated).toBe(true);
  });

  it('refuses a sandbox that is not running with invalid_state', async () => {
    const { plane, principal } = await testPlane();
    const queued = (await plane.sandboxes.create(principal, {})).sandbox;
    expect(await codeOf(plane.sandboxes.exec(principal, queued.id, { command: 'true' }))).toBe(
      'invalid_state',
    );
  });
});

/** The sandbox as stored, and the ids of every sandbox the store is asked for from now on. */
async function countingSandboxReads(
  plane: Awaited<ReturnType<typeof running>>['plane'],
  orgId: string,
  id: string,
) {
  const record = await plane.store.getSandbox(orgId, id);
  const reads: string[] = [];
  const get = plane.store.getSandbox.bind(plane.store);
  plane.store.getSandbox = async (org, sandboxId) => {
    reads.push(sandboxId);
    return get(org, sandboxId);
  };
  return { record, reads };
}

describe('what the request read with its key', () => {
  it('is used instead of a read of its own, when it is the sandbox asked for', async () => {
    const { plane, principal, id } = await running();
    const { record, reads } = await countingSandboxReads(plane, principal.orgId, id);
    const asked = { orgId: principal.orgId, sandboxId: id };
    const withRead = <T>(sandbox: SandboxRecord | null, run: () => Promise<T>) =>
      withReadAlong(asked, { sandbox }, run);
    expect((await withRead(record ?? null, () => plane.sandboxes.get(principal, id))).id).toBe(id);
    expect(reads).toEqual([]);
    // Read along and absent: not found, without another look.
    expect(await codeOf(withRead(null, () => plane.sandboxes.get(principal, id)))).toBe('not_found');
    expect(reads).toEqual([]);
    // Another sandbox than the one asked for: the service reads the one asked for.
    const other = (await plane.sandboxes.create(principal, {})).sandbox;
    expect((await withRead(record ?? null, () => plane.sandboxes.get(principal, other.id))).id).toBe(
      other.id,
    );
    expect(reads).toEqual([other.id]);
  });

  it('serves the first read only: a later read in the same request goes to the store', async () => {
    const { plane, principal, id } = await running();
    const { record, reads } = await countingSandboxReads(plane, principal.orgId, id);
    await withReadAlong({ orgId: principal.orgId, sandboxId: id }, { sandbox: record ?? null }, async () => {
      await plane.sandboxes.get(principal, id);
      await plane.sandboxes.get(principal, id);
    });
    expect(reads).toEqual([id]);
  });

  it('is not seen outside the request, nor in another org', async () => {
    const { plane, principal, id } = await running();
    const record = await plane.store.getSandbox(principal.orgId, id);
    if (record === undefined) throw new Error('the sandbox was not written');
    const stale: SandboxRecord = { ...record, status: 'queued' };
    const elsewhere = { orgId: 'org_01J00000000000000000000000', sandboxId: id };
    const seen = await withReadAlong(elsewhere, { sandbox: stale }, () => plane.sandboxes.get(principal, id));
    expect(seen.status).toBe('running');
    expect((await plane.sandboxes.get(principal, id)).status).toBe('running');
  });

  it("still hides another project's sandbox read along", async () => {
    const { plane, principal, id } = await running();
    const record = await plane.store.getSandbox(principal.orgId, id);
    const project = await plane.tenancy.createProject(principal.orgId, { name: 'p' });
    expect(
      await codeOf(
        withReadAlong({ orgId: principal.orgId, sandboxId: id }, { sandbox: record ?? null }, () =>
          plane.sandboxes.get({ ...principal, projectId: project.id }, id),
        ),
      ),
    ).toBe('not_found');
  });
});
