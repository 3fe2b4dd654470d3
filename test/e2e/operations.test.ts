import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import type { LocalRuntime } from '../../infra/local/runtime.ts';
import { errors } from '../../lib/errors.ts';
import { snapshotSchema } from '../../lib/schemas/sandbox-operations.ts';
import { sandboxSchema } from '../../lib/schemas/sandboxes.ts';
import { DifferentlyClient } from '../../sdk/client.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';
import { expectError } from '../helpers/http-client.ts';

/**
 * Sandbox operations over HTTP on the local runtime, on the fake pool (every optional interface) and the
 * devhost pool (files, stop/start and pause/resume; no memory snapshots or ports).
 */
describe('sandbox operations over HTTP', () => {
  const fake = new FakeAdapter();
  let e: E2e;
  let runtime: LocalRuntime;
  let api: E2e['api'];
  let key: string;

  beforeAll(async () => {
    e = await startE2e({ fakes: { fake: { adapter: fake } }, quota: { maxCPU: 10, maxSnapshots: 2 } });
    ({ runtime, api, key } = e);
  });

  afterAll(async () => {
    await e?.stop();
  });

  const get = (id: string, as?: string) => e.get(id, as);
  const until = (id: string, status: string, as?: string) => e.until(id, status, as);
  const running = (pool: string, extra: Record<string, unknown> = {}, as?: string) =>
    e.running(pool, extra, as);
  const destroy = (id: string) => e.destroy(id);

  const raw = (method: string, path: string, body?: Buffer) =>
    fetch(`${runtime.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
      ...(body && { body }),
    });

  it('stop releases cpu, start re-reserves it and is refused when it no longer fits', async () => {
    // An org of its own with room for two 1-CPU sandboxes.
    const org = z
      .object({ id: z.string() })
      .parse(
        (await api.post('/v1/admin/orgs', runtime.adminKey, { name: 'tight', quota: { maxCPU: 2 } })).body,
      );
    const tight = z
      .object({ key: z.string() })
      .parse((await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 't' })).body).key;
    const a = await running('fake', {}, tight);
    const b = await running('fake', {}, tight);
    const usage = async () => (await runtime.plane.store.getUsage(org.id)).cpu;
    expect(await usage()).toBe(2);
    const stopped = await api.post(`/v1/sandboxes/${a.id}/stop`, tight);
    expect(stopped.status).toBe(200);
    expect(sandboxSchema.parse(stopped.body).status).toBe('stopped');
    expect(await usage()).toBe(1);
    const c = await running('fake', {}, tight);
    const refused = expectError(await api.post(`/v1/sandboxes/${a.id}/start`, tight), 429, 'quota_exceeded');
    expect(refused.error.details).toMatchObject({ field: 'cpu', limit: 2 });
    expect((await get(a.id, tight)).status).toBe('stopped');
    await api.post(`/v1/sandboxes/${c.id}/stop`, tight);
    expect((await api.post(`/v1/sandboxes/${a.id}/start`, tight)).status).toBe(200);
    expect((await get(a.id, tight)).status).toBe('running');
    expect(await usage()).toBe(2);
    expectError(await api.post(`/v1/sandboxes/${a.id}/start`, tight), 409, 'invalid_state');
    expect(b.status).toBe('running');
  });

  it.each(['fake', 'local'])(
    'pause makes exec and files 409 with the status; resume brings them back (%s)',
    async (pool) => {
      const s = await running(pool);
      expect((await api.post(`/v1/sandboxes/${s.id}/pause`, key)).status).toBe(200);
      const refused = expectError(
        await api.post(`/v1/sandboxes/${s.id}/exec`, key, { command: 'true' }),
        409,
        'invalid_state',
      );
      expect(refused.error.details).toEqual({ status: 'paused' });
      expectError(await api.get(`/v1/sandboxes/${s.id}/files?path=/`, key), 409, 'invalid_state');
      expect((await api.post(`/v1/sandboxes/${s.id}/resume`, key)).status).toBe(200);
      expect((await api.post(`/v1/sandboxes/${s.id}/exec`, key, { command: 'true' })).status).toBe(200);
      await destroy(s.id);
    },
  );

  it('snapshot then restore sees the file; fork sees it and inherits env and labels; maxSnapshots holds', async () => {
    const parent = await running('fake', { env: { MODE: 'parent' }, labels: { team: 'x' } });
    expect(
      (await raw('PUT', `/v1/sandboxes/${parent.id}/files/content?path=/work/data.txt`, Buffer.from('kept')))
        .status,
    ).toBe(204);
    const snap = await api.post(`/v1/sandboxes/${parent.id}/snapshots`, key, { kind: 'disk' });
    expect(snap.status).toBe(201);
    const snapshot = snapshotSchema.parse(snap.body);
    expect(snap.text).not.toContain('backendRef');
    const restored = await running('fake', { fromSnapshot: snapshot.id });
    expect(restored.pool).toBe('fake');
    expect(
      await (await raw('GET', `/v1/sandboxes/${restored.id}/files/content?path=/work/data.txt`)).text(),
    ).toBe('kept');

    const forked = await api.post(`/v1/sandboxes/${parent.id}/fork`, key);
    expect(forked.status).toBe(202);
    const child = await until(sandboxSchema.parse(forked.body).id, 'running');
    expect(child.labels).toEqual({ team: 'x', 'differently.dev/forked-from': parent.id });
    expect(child.envKeys).toEqual(['MODE']);
    expect(
      await (await raw('GET', `/v1/sandboxes/${child.id}/files/content?path=/work/data.txt`)).text(),
    ).toBe('kept');

    // Two snapshots now exist (the explicit one and the fork's): the quota of 2 is used up.
    expectError(
      await api.post(`/v1/sandboxes/${parent.id}/snapshots`, key, { kind: 'disk' }),
      429,
      'quota_exceeded',
    );
    const listed = z
      .object({ items: z.array(snapshotSchema) })
      .parse((await api.get('/v1/snapshots', key)).body);
    expect(listed.items.length).toBe(2);
    const deleted = await api.delete(`/v1/snapshots/${snapshot.id}`, key);
    expect(deleted.body).toEqual({ id: snapshot.id, deleted: true, backendDeleted: true });
    expectError(await api.get(`/v1/snapshots/${snapshot.id}`, key), 404, 'not_found');
    expect((await api.post(`/v1/sandboxes/${parent.id}/snapshots`, key, {})).status).toBe(201);
    for (const id of [parent.id, restored.id, child.id]) await destroy(id);
    // Snapshots outlive their sandboxes: give the quota back for the tests after this one.
    for (const item of z
      .object({ items: z.array(snapshotSchema) })
      .parse((await api.get('/v1/snapshots', key)).body).items) {
      await api.delete(`/v1/snapshots/${item.id}`, key);
    }
  });

  it('a snapshot the backend fails is answered as the error, stays listed as failed and holds no quota; a lost backend on delete is named', async () => {
    const s = await running('fake');
    const usage = async () => (await runtime.plane.store.getUsage(s.orgId)).snapshots;
    const before = await usage();
    fake.inject('snapshot', { error: errors.sandboxFailed('disk full') });
    const refused = await api.post(`/v1/sandboxes/${s.id}/snapshots`, key, {});
    expectError(refused, 503, 'provider_unavailable');
    expect(JSON.stringify(refused.body)).toContain('disk full');
    expect(await usage()).toBe(before);
    const listed = z
      .object({ items: z.array(snapshotSchema) })
      .parse((await api.get('/v1/snapshots', key)).body).items;
    expect(listed.map((item) => [item.status, item.statusMessage])).toEqual([
      ['failed', 'the backend refused the snapshot: disk full'],
    ]);
    // Deleting a failed snapshot removes its record; there was nothing on the backend and no slot to free.
    const failedId = listed[0]?.id ?? '';
    expect((await api.delete(`/v1/snapshots/${failedId}`, key)).body).toMatchObject({ deleted: true });
    expect(await usage()).toBe(before);

    const snap = snapshotSchema.parse((await api.post(`/v1/sandboxes/${s.id}/snapshots`, key, {})).body);
    const held = fake.snapshotCount();
    fake.inject('deleteSnapshot', { error: errors.providerUnavailable('connection refused') });
    const deleted = await api.delete(`/v1/snapshots/${snap.id}`, key);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: snap.id, deleted: true, backendDeleted: false });
    expect(z.object({ note: z.string() }).parse(deleted.body).note).toContain('left behind');
    expectError(await api.get(`/v1/snapshots/${snap.id}`, key), 404, 'not_found');
    expect(await usage()).toBe(before);
    expect(fake.snapshotCount()).toBe(held);
    await destroy(s.id);
  });

  // A snapshot or fork of a sandbox that is not running: a paused or stopped one, on the fake pool (every
  // interface) and on devhost (a real backend's files). The parent stays as it was.
  it.each([
    { pool: 'fake', state: 'paused', call: 'pause' },
    { pool: 'fake', state: 'stopped', call: 'stop' },
    { pool: 'local', state: 'paused', call: 'pause' },
    { pool: 'local', state: 'stopped', call: 'stop' },
  ])('snapshots and forks a $state sandbox on $pool', async ({ pool, state, call }) => {
    const parent = await running(pool, { labels: { from: state } });
    await raw('PUT', `/v1/sandboxes/${parent.id}/files/content?path=/work/kept.txt`, Buffer.from(state));
    expect((await api.post(`/v1/sandboxes/${parent.id}/${call}`, key)).status).toBeLessThan(300);
    await until(parent.id, state);
    const taken = await api.post(`/v1/sandboxes/${parent.id}/snapshots`, key, { kind: 'disk' });
    expect([201, 202], taken.text).toContain(taken.status);
    const tenant = new DifferentlyClient({ endpoint: runtime.url, apiKey: key });
    const snapshot = await tenant.waitUntilSnapshotReady(snapshotSchema.parse(taken.body).id, {
      intervalMs: 20,
    });
    expect(snapshot).toMatchObject({ sandboxId: parent.id, pool, status: 'ready' });
    const forked = await api.post(`/v1/sandboxes/${parent.id}/fork`, key);
    expect(forked.status, forked.text).toBe(202);
    const child = await until(sandboxSchema.parse(forked.body).id, 'running');
    const restored = await running(pool, { fromSnapshot: snapshot.id });
    for (const copy of [child, restored]) {
      expect(copy.pool).toBe(pool);
      expect(
        await (await raw('GET', `/v1/sandboxes/${copy.id}/files/content?path=/work/kept.txt`)).text(),
      ).toBe(state);
    }
    expect((await get(parent.id)).status).toBe(state);
    for (const id of [parent.id, restored.id, child.id]) await destroy(id);
    for (const item of z
      .object({ items: z.array(snapshotSchema) })
      .parse((await api.get('/v1/snapshots', key)).body).items) {
      await api.delete(`/v1/snapshots/${item.id}`, key);
    }
  });

  it('snapshots and forks on devhost by copying the sandbox directory', async () => {
    const parent = await running('local', { env: { MODE: 'devhost' } });
    await raw('PUT', `/v1/sandboxes/${parent.id}/files/content?path=/work/notes.txt`, Buffer.from('on disk'));
    const snap = snapshotSchema.parse(
      (await api.post(`/v1/sandboxes/${parent.id}/snapshots`, key, { kind: 'disk' })).body,
    );
    expect(snap).toMatchObject({ kind: 'disk', pool: 'local', sizeBytes: 7 });
    const restored = await running('local', { fromSnapshot: snap.id });
    expect(
      await (await raw('GET', `/v1/sandboxes/${restored.id}/files/content?path=/work/notes.txt`)).text(),
    ).toBe('on disk');
    const forked = sandboxSchema.parse((await api.post(`/v1/sandboxes/${parent.id}/fork`, key)).body);
    const child = await until(forked.id, 'running');
    expect(child.pool).toBe('local');
    const echoed = await api.post(`/v1/sandboxes/${child.id}/exec`, key, {
      command: 'printf "%s %s" "$(cat "$HOME/work/notes.txt")" "$MODE"',
    });
    expect(z.object({ stdout: z.string() }).parse(echoed.body).stdout).toBe('on disk devhost');
    for (const id of [parent.id, restored.id, child.id]) await destroy(id);
    for (const item of z
      .object({ items: z.array(snapshotSchema) })
      .parse((await api.get('/v1/snapshots', key)).body).items) {
      await api.delete(`/v1/snapshots/${item.id}`, key);
    }
  });

  it('answers 501 with operation, pool and adapter on a pool without the feature', async () => {
    const s = await running('local');
    for (const [path, body] of [
      [`/v1/sandboxes/${s.id}/snapshots`, { kind: 'memory' }],
      [`/v1/sandboxes/${s.id}/ports`, { port: 8080 }],
    ] as const) {
      const refused = expectError(await api.post(path, key, body), 501, 'unsupported_operation');
      expect(refused.error.details).toMatchObject({
        pool: 'local',
        adapter: 'devhost',
        operation: expect.any(String),
      });
    }
    await destroy(s.id);
  });

  it('runs a command as root where the pool offers exec.root (devhost: uid 0 in the jail), 501 elsewhere', async () => {
    const local = await running('local');
    const asRoot = await api.post(`/v1/sandboxes/${local.id}/exec`, key, { command: 'id -u', user: 'root' });
    expect(asRoot.body).toMatchObject({ exitCode: 0, stdout: '0\n' });
    const plain = await api.post(`/v1/sandboxes/${local.id}/exec`, key, { command: 'id -u' });
    expect(plain.body).toMatchObject({ exitCode: 0, stdout: '1000\n' });
    const onFake = await running('fake');
    const refused = expectError(
      await api.post(`/v1/sandboxes/${onFake.id}/exec`, key, { command: 'id -u', user: 'root' }),
      501,
      'unsupported_operation',
    );
    expect(refused.error.details).toMatchObject({ feature: 'exec.root', pool: 'fake' });
    expectError(
      await api.post(`/v1/sandboxes/${local.id}/exec`, key, { command: 'id', user: 'admin' }),
      400,
      'invalid_request',
    );
    await destroy(local.id);
    await destroy(onFake.id);
  });

  it('returns a port URL where the pool exposes ports', async () => {
    const s = await running('fake');
    const reply = await api.post(`/v1/sandboxes/${s.id}/ports`, key, { port: 3000 });
    expect(reply.status).toBe(200);
    expect(z.object({ url: z.string().url() }).parse(reply.body).url).toContain('3000');
    expectError(await api.post(`/v1/sandboxes/${s.id}/ports`, key, { port: 70000 }), 400, 'invalid_request');
    await destroy(s.id);
  });

  it('writes, reads and lists files as bytes on devhost, within the size limit, with valid paths only', async () => {
    const s = await running('local');
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    expect(
      (await raw('PUT', `/v1/sandboxes/${s.id}/files/content?path=/deep/dir/bin.dat`, bytes)).status,
    ).toBe(204);
    const read = await raw('GET', `/v1/sandboxes/${s.id}/files/content?path=/deep/dir/bin.dat`);
    expect(read.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);
    const listing = z
      .object({ items: z.array(z.object({ name: z.string(), isDir: z.boolean(), size: z.number() })) })
      .parse((await api.get(`/v1/sandboxes/${s.id}/files?path=/deep/dir`, key)).body);
    expect(listing.items).toEqual([expect.objectContaining({ name: 'bin.dat', isDir: false, size: 7 })]);
    const big = await raw(
      'PUT',
      `/v1/sandboxes/${s.id}/files/content?path=/big`,
      Buffer.alloc(4 * 1024 * 1024 + 1),
    );
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { details: unknown } }).error.details).toEqual({
      limitBytes: 4 * 1024 * 1024,
    });
    expectError(
      await api.get(`/v1/sandboxes/${s.id}/files/content?path=relative.txt`, key),
      400,
      'invalid_request',
    );
    expectError(await api.get(`/v1/sandboxes/${s.id}/files/content?path=/missing`, key), 404, 'not_found');
    await destroy(s.id);
  });
});
