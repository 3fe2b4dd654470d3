import { describe, expect, it } from 'vitest';
import { newId } from '../../../lib/ids.ts';
import type { SandboxRecord } from '../../../lib/store/records.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { admin, codeOf, created, move, newOrg, type StoreUnderTest } from './store-under-test.ts';

/** The tenancy aggregate's part of the store conformance suite (lib/store/tenancy/). */
export function tenancyConformance(subject: StoreUnderTest): void {
  describe('orgs and keys', () => {
    it('creates, gets and pages orgs; a duplicate id is a conflict', async () => {
      const store = await subject.create();
      const orgs = [];
      for (let i = 0; i < 5; i++) orgs.push(await newOrg(store));
      expect(await store.getOrg(orgs[0]?.id ?? '')).toEqual(orgs[0]);
      expect(await store.getOrg(newId('org'))).toBeUndefined();
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.listOrgs({ cursor, limit: 2 });
        seen.push(...page.items.map((o) => o.id));
        cursor = page.nextCursor ?? undefined;
        pages++;
      } while (cursor !== undefined);
      expect(seen).toEqual(orgs.map((o) => o.id));
      expect(pages).toBe(3);
      const duplicate = orgs[0];
      if (duplicate === undefined) throw new Error('no org');
      expect(await codeOf(store.createOrg(duplicate, admin))).toBe('conflict');
    });

    it('creates, lists and revokes keys; revoking twice keeps the first time', async () => {
      const store = await subject.create();
      const org = await newOrg(store);
      const key = {
        id: newId('key'),
        orgId: org.id,
        name: 'k',
        role: 'member' as const,
        projectId: null,
        secretHash: 'a'.repeat(64),
        createdAt: new Date().toISOString(),
        revokedAt: null,
      };
      await store.createKey(key, admin);
      expect(await store.getKey(key.id)).toEqual(key);
      expect((await store.listKeys(org.id, { limit: 10 })).items.map((k) => k.id)).toEqual([key.id]);
      expect((await store.listKeys(newId('org'), { limit: 10 })).items).toEqual([]);
      const revoked = await store.revokeKey(key.id, '2026-01-01T00:00:00.000Z', admin);
      expect(revoked.revokedAt).toBe('2026-01-01T00:00:00.000Z');
      expect((await store.revokeKey(key.id, '2027-01-01T00:00:00.000Z', admin)).revokedAt).toBe(
        '2026-01-01T00:00:00.000Z',
      );
      expect(await codeOf(store.revokeKey(newId('key'), 'x', admin))).toBe('not_found');
      expect(await codeOf(store.createKey({ ...key, id: newId('key'), orgId: newId('org') }, admin))).toBe(
        'not_found',
      );
    });
  });

  describe('key rotation', () => {
    const keyOf = (orgId: string) => ({
      id: newId('key'),
      orgId,
      name: 'k',
      role: 'member' as const,
      projectId: null,
      secretHash: 'b'.repeat(64),
      createdAt: new Date().toISOString(),
      revokedAt: null,
    });

    it('rotates in one write: five concurrent rotations of one key leave exactly one live successor', async () => {
      const store = await subject.create();
      const org = await newOrg(store);
      const old = keyOf(org.id);
      await store.createKey(old, admin);
      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          codeOf(store.rotateKey(old.id, keyOf(org.id), new Date().toISOString(), admin)),
        ),
      );
      expect(results.filter((r) => r === 'ok')).toHaveLength(1);
      expect(results.filter((r) => r !== 'ok').every((r) => r === 'invalid_state')).toBe(true);
      const live = (await store.listKeys(org.id, { limit: 20 })).items.filter((k) => k.revokedAt === null);
      expect(live).toHaveLength(1);
      expect(live[0]?.id).not.toBe(old.id);
    });

    it('never makes a successor for a key revoked first, even when both race', async () => {
      const store = await subject.create();
      const org = await newOrg(store);
      for (let round = 0; round < 5; round++) {
        const old = keyOf(org.id);
        await store.createKey(old, admin);
        const successor = keyOf(org.id);
        const [rotated] = await Promise.all([
          codeOf(store.rotateKey(old.id, successor, new Date().toISOString(), admin)),
          store.revokeKey(old.id, new Date().toISOString(), admin),
        ]);
        const made = await store.getKey(successor.id);
        // Either the rotation won (then its successor lives and the old key is revoked), or the revoke
        // did and there is no successor at all.
        if (rotated === 'ok') expect(made?.revokedAt).toBeNull();
        else expect([rotated, made]).toEqual(['invalid_state', undefined]);
        expect((await store.getKey(old.id))?.revokedAt).not.toBeNull();
      }
    });
  });

  describe('projects and quota changes', () => {
    it('creates and pages projects per org; an unknown org is not_found', async () => {
      const store = await subject.create();
      const org = await newOrg(store);
      const projects = [0, 1, 2].map((i) => ({
        id: newId('project'),
        orgId: org.id,
        name: `p${i}`,
        budget: null,
        createdAt: new Date().toISOString(),
      }));
      for (const project of projects) await store.createProject(project, admin);
      const first = await store.listProjects(org.id, { limit: 2 });
      const rest = await store.listProjects(org.id, { limit: 2, cursor: first.nextCursor ?? undefined });
      expect([...first.items, ...rest.items]).toEqual(projects);
      expect(rest.nextCursor).toBeNull();
      expect(await store.getProject(org.id, projects[0]?.id ?? '')).toEqual(projects[0]);
      expect(await store.getProject(newId('org'), projects[0]?.id ?? '')).toBeUndefined();
      const orphan = {
        ...projects[0],
        id: newId('project'),
        orgId: newId('org'),
        name: 'x',
        budget: null,
        createdAt: 'x',
      };
      expect(await codeOf(store.createProject(orphan, admin))).toBe('not_found');
    });

    it('moves headroom with a quota change: lowered below usage, new work is refused; raised, it fits', async () => {
      const store = await subject.create();
      const org = await newOrg(store, { maxCPU: 4 });
      const running = await created(store, org.id, { resources: { cpu: 2, memoryMiB: 512, diskGiB: 1 } });
      await move(store, running, 'provisioning');
      const lowered = await store.setQuota(org.id, { ...org.quota, maxCPU: 1 }, admin);
      expect(lowered.quota.maxCPU).toBe(1);
      expect((await store.getOrg(org.id))?.quota.maxCPU).toBe(1);
      const next = await created(store, org.id, { resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 } });
      expect(await codeOf(move(store, next, 'provisioning'))).toBe('quota_exceeded');
      await store.setQuota(org.id, { ...org.quota, maxCPU: 3 }, admin);
      const moved = await move(store, next, 'provisioning');
      expect(moved.status).toBe('provisioning');
      expect((await store.getUsage(org.id)).cpu).toBe(3);
      expect(await codeOf(store.setQuota(newId('org'), org.quota, admin))).toBe('not_found');
      expect((await verifyOrgChain(store, org.id)).ok).toBe(true);
    });
  });

  describe('reads for one round trip', () => {
    it('moves the pools version with every write among pools, views, down marks and the policy, and only then', async () => {
      const store = await subject.create();
      const now = new Date().toISOString();
      const versions: (string | null)[] = [(await store.readPools()).version];
      const note = async () => {
        const { version } = await store.readPools();
        expect(versions).not.toContain(version);
        versions.push(version);
      };
      expect(versions[0]).toBeNull();
      const pool = {
        name: 'lab',
        adapter: 'fake',
        trust: 'private' as const,
        maxConcurrency: 0,
        config: {},
        createdAt: now,
        updatedAt: now,
      };
      await store.putPool(pool, 'create', admin);
      await note();
      await store.putPool({ ...pool, maxConcurrency: 2 }, 'replace', admin);
      await note();
      const view = {
        pool: 'lab',
        healthy: true,
        reason: null,
        capabilities: null,
        capacity: null,
        refreshedAt: now,
        downSince: null,
        downReason: null,
      };
      await store.putPoolView(view);
      await note();
      await store.markPoolDown('lab', '2026-01-01T00:00:02.000Z', 'refused');
      await note();
      await store.putPolicy({ allowExternal: true, externalPools: [] }, admin);
      await note();
      // Reads and a refused write leave it: an older down mark, a duplicate pool.
      await store.listPools();
      await store.markPoolDown('lab', '2026-01-01T00:00:01.000Z', 'older');
      expect(await codeOf(store.putPool(pool, 'create', admin))).toBe('conflict');
      expect((await store.readPools()).version).toBe(versions.at(-1));
      await store.deletePool('lab', admin);
      await note();
      // One read holds them all: pools, views with their marks, and the policy.
      await store.putPool({ ...pool, name: 'lab-2' }, 'create', admin);
      await store.putPoolView({ ...view, pool: 'lab-2' });
      await store.markPoolDown('lab-2', '2026-01-01T00:00:03.000Z', 'down');
      const state = await store.readPools();
      expect(state.pools.map((p) => p.name)).toEqual(['lab-2']);
      expect(state.views).toEqual([
        { ...view, pool: 'lab-2', downSince: '2026-01-01T00:00:03.000Z', downReason: 'down' },
      ]);
      expect(state.policy).toEqual({ allowExternal: true, externalPools: [] });
    });

    it('reads a key with records of its org in one call: null where absent, nothing of another org', async () => {
      const store = await subject.create();
      const a = await newOrg(store);
      const b = await newOrg(store);
      const key = {
        id: newId('key'),
        orgId: a.id,
        name: 'k',
        role: 'member' as const,
        projectId: null,
        secretHash: 'h',
        createdAt: new Date().toISOString(),
        revokedAt: null,
      };
      await store.createKey(key, admin);
      const sandbox = await created(store, a.id);
      await created(store, a.id);
      const other = await created(store, b.id);
      const read = await store.getKeyWith(key.id, {
        orgId: a.id,
        org: true,
        sandboxId: sandbox.id,
        waiting: true,
        poolsVersion: true,
      });
      expect(read.key).toEqual(key);
      expect(read.along).toEqual({ org: a, sandbox, waiting: 2, poolsVersion: null });
      // Another org's sandbox id reads as absent in this org; an unknown key as undefined.
      const elsewhere = await store.getKeyWith(newId('key'), { orgId: a.id, sandboxId: other.id });
      expect(elsewhere).toEqual({ key: undefined, along: { sandbox: null } });
      expect(await store.readAlong({ orgId: b.id, org: true, waiting: true })).toEqual({
        org: b,
        waiting: 1,
      });
      expect(await store.readAlong({ orgId: newId('org'), org: true, waiting: true })).toEqual({
        org: null,
        waiting: 0,
      });
    });

    it('counts the sandboxes of every org waiting on the pools, never those waiting for quota', async () => {
      const store = await subject.create();
      const a = await newOrg(store);
      const b = await newOrg(store);
      const count = async () => (await store.readAlong({ orgId: a.id, waitingOnPools: true })).waitingOnPools;
      expect(await count()).toBe(0);
      const wait = (record: SandboxRecord, waitingFor: SandboxRecord['waitingFor']) =>
        store.updateSandbox(record, { waitingFor, updatedAt: new Date().toISOString() }, { audit: admin });
      const onCapacity = await wait(await created(store, a.id), 'capacity');
      const onPool = await wait(await created(store, b.id), 'pool');
      await wait(await created(store, b.id), 'quota');
      await created(store, b.id);
      expect(await count()).toBe(2);
      // Many waiters, spread over the count's parts, add up; a move between reasons counts once.
      const more = [];
      for (let i = 0; i < 6; i++) more.push(await wait(await created(store, b.id), 'snapshot'));
      expect(await count()).toBe(8);
      const snapshotToCapacity = more[0];
      if (snapshotToCapacity === undefined) throw new Error('no waiter');
      await wait(snapshotToCapacity, 'capacity');
      expect(await count()).toBe(8);
      // Placed, moved to wait for quota, or terminated: no longer waiting on the pools.
      await move(store, onCapacity, 'provisioning');
      await wait(onPool, 'quota');
      for (const record of more.slice(1)) await move(store, record, 'terminating', 'p1');
      expect(await count()).toBe(1);
      expect(await store.getKeyWith(newId('key'), { orgId: b.id, waitingOnPools: true })).toEqual({
        key: undefined,
        along: { waitingOnPools: 1 },
      });
    });

    it("lists an org's queued sandboxes alone, the longest idle first", async () => {
      const store = await subject.create();
      const org = await newOrg(store);
      const other = await newOrg(store);
      const at = (second: number) => `2026-01-01T00:00:0${second}.000Z`;
      const late = await created(store, org.id, { updatedAt: at(5) });
      const early = await created(store, org.id, { updatedAt: at(1) });
      await created(store, other.id, { updatedAt: at(0) });
      const moved = await created(store, org.id, { updatedAt: at(2) });
      await move(store, moved, 'provisioning');
      const queued = await store.listQueued(org.id, 10);
      expect(queued.map((s) => s.id)).toEqual([early.id, late.id]);
      expect((await store.listQueued(org.id, 1)).map((s) => s.id)).toEqual([early.id]);
    });
  });
}
