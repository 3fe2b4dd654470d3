import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../lib/audit/chain.ts';
import { ApiError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { envSchema, labelsSchema, recordLimits } from '../../lib/schemas/common.ts';
import type { SandboxStatus } from '../../lib/schemas/sandbox-status.ts';
import { type Quota, quotaSchema } from '../../lib/schemas/tenancy.ts';
import { installationChain, type Store } from '../../lib/store/port.ts';
import type { OrgRecord, SandboxRecord } from '../../lib/store/records.ts';
import { verifyOrgChain } from '../../lib/tenancy/audit-trail.ts';
import { sandboxRecord } from '../helpers/records.ts';

/** Direct access to stored audit events, to prove tampering is detected. */
export interface AuditTamper {
  rewrite(orgId: string, seq: number, change: (event: AuditEvent) => AuditEvent): Promise<void>;
  remove(orgId: string, seq: number): Promise<void>;
}

export interface StoreUnderTest {
  /** A fresh, empty store; two calls with `shared` give two handles on the same state. */
  create(options?: { shared?: boolean; now?: () => Date }): Promise<Store>;
  tamper(store: Store): AuditTamper;
}

const admin = { actor: 'admin', action: 'test', target: 'x', details: {} };
const system = (action: string) => ({ actor: 'system', action, target: 'sbx', details: {} });

async function newOrg(store: Store, quota: Partial<Quota> = {}): Promise<OrgRecord> {
  const org: OrgRecord = {
    id: newId('org'),
    name: 'org',
    quota: quotaSchema.parse(quota),
    idlePolicy: null,
    budget: null,
    createdAt: new Date().toISOString(),
  };
  await store.createOrg(org, { ...admin, action: 'org.created', target: org.id });
  return org;
}

async function created(store: Store, orgId: string, overrides: Partial<SandboxRecord> = {}) {
  const record = sandboxRecord(orgId, overrides);
  await store.createSandbox(record, system('sandbox.created'));
  return record;
}

async function move(
  store: Store,
  record: SandboxRecord,
  status: SandboxStatus,
  pool = 'p1',
  poolLimit?: number,
) {
  return store.updateSandbox(
    record,
    { status, pool, updatedAt: new Date().toISOString() },
    { audit: system(`sandbox.${status}`), ...(poolLimit !== undefined && { poolLimit }) },
  );
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
}

/** The behaviour every Store implementation must have; run against each in test/integration. */
export function storeConformance(name: string, subject: StoreUnderTest): void {
  describe(`Store conformance: ${name}`, () => {
    describe('installation', () => {
      it('is created once and stable across handles on the same state', async () => {
        const store = await subject.create();
        const first = await store.installation();
        expect(first).toMatch(/^inst_/);
        expect(await store.installation()).toBe(first);
        const other = await subject.create({ shared: true });
        if (other !== store) expect(await other.installation()).toBe(first);
      });
    });

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

    describe('projects, quota changes, pools, views and the policy', () => {
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

      it('stores runtime pools (create conflicts on a taken name), their views, and the policy', async () => {
        const store = await subject.create();
        const now = new Date().toISOString();
        const pool = {
          name: 'lab',
          adapter: 'firecracker',
          trust: 'private' as const,
          maxConcurrency: 3,
          config: { endpoint: 'https://lab' },
          createdAt: now,
          updatedAt: now,
        };
        await store.putPool(pool, 'create', admin);
        expect(await codeOf(store.putPool(pool, 'create', admin))).toBe('conflict');
        expect(await codeOf(store.putPool({ ...pool, name: 'nope' }, 'replace', admin))).toBe('not_found');
        await store.putPool({ ...pool, maxConcurrency: 5 }, 'replace', admin);
        expect(await store.getPool('lab')).toEqual({ ...pool, maxConcurrency: 5 });
        expect((await store.listPools()).map((p) => p.name)).toEqual(['lab']);
        const view = {
          pool: 'lab',
          healthy: false,
          reason: 'no adapter for kind firecracker in this build',
          capabilities: null,
          capacity: null,
          refreshedAt: now,
          downSince: null,
          downReason: null,
        };
        await store.putPoolView(view);
        await store.putPoolView({ ...view, refreshedAt: 'later' });
        expect(await store.listPoolViews()).toEqual([{ ...view, refreshedAt: 'later' }]);
        // A down mark is shared, moves only forward, survives a probe's write, and needs no view.
        await store.markPoolDown('lab', '2026-01-01T00:00:02.000Z', 'connection refused');
        await store.markPoolDown('lab', '2026-01-01T00:00:01.000Z', 'older');
        await store.putPoolView({ ...view, refreshedAt: 'latest' });
        expect(await store.listPoolViews()).toEqual([
          {
            ...view,
            refreshedAt: 'latest',
            downSince: '2026-01-01T00:00:02.000Z',
            downReason: 'connection refused',
          },
        ]);
        await store.markPoolDown('lab-2', '2026-01-01T00:00:03.000Z', 'down');
        expect((await store.listPoolViews()).find((v) => v.pool === 'lab-2')).toMatchObject({
          downSince: '2026-01-01T00:00:03.000Z',
          capabilities: null,
        });
        expect(await store.getPolicy()).toBeUndefined();
        await store.putPolicy({ allowExternal: true, externalPools: ['lab'] }, admin);
        expect(await store.getPolicy()).toEqual({ allowExternal: true, externalPools: ['lab'] });
        await store.deletePool('lab', admin);
        expect(await store.getPool('lab')).toBeUndefined();
        expect((await store.listPoolViews()).map((view) => view.pool)).toEqual(['lab-2']);
        expect(await codeOf(store.deletePool('lab', admin))).toBe('not_found');
        // Every change was recorded in the installation's own chain.
        await store.linkAudit(installationChain);
        const chain = await verifyOrgChain(store, installationChain);
        expect(chain).toMatchObject({ ok: true, checked: 4 });
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

    describe('sandboxes', () => {
      it('stores a sandbox at every record limit the API allows (labels and env at their maximum)', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const labels = Object.fromEntries(
          Array.from({ length: recordLimits.maxLabels }, (_, i) => [
            `k${String(i).padStart(2, '0')}${'x'.repeat(60)}`,
            'v'.repeat(255),
          ]),
        );
        // The env's byte budget, spent on the largest values its names allow.
        const names = Array.from(
          { length: 2 },
          (_, i) => `E${i}${'N'.repeat(recordLimits.maxEnvNameLength - 3)}`,
        );
        const valueBytes = Math.floor((recordLimits.maxEnvBytes - names.join('').length) / names.length);
        const env = Object.fromEntries(names.map((name) => [name, 'v'.repeat(valueBytes)]));
        expect(labelsSchema.safeParse(labels).success).toBe(true);
        expect(envSchema.safeParse(env).success).toBe(true);
        const sandbox = await created(store, org.id, { labels, env });
        expect(await store.getSandbox(org.id, sandbox.id)).toEqual(sandbox);
      });

      it('bounds the sandboxes waiting per org (queued or provisioning); a retry moves within them, leaving frees a place', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const waiting = (overrides: Partial<SandboxRecord> = {}) => {
          const record = sandboxRecord(org.id, overrides);
          return store
            .createSandbox(record, system('sandbox.created'), undefined, { maxWaiting: 2 })
            .then(() => record);
        };
        const first = await waiting();
        const second = await waiting();
        expect(await codeOf(waiting())).toBe('quota_exceeded');
        // Provisioning still waits; back to queued (a retry) changes nothing.
        const provisioning = await move(store, first, 'provisioning');
        expect(await codeOf(waiting())).toBe('quota_exceeded');
        const requeued = await move(store, provisioning, 'queued');
        expect(await codeOf(waiting())).toBe('quota_exceeded');
        // Running (or failed, or terminating) no longer waits: a place is free again, exactly one.
        const active = await move(store, await move(store, requeued, 'provisioning'), 'running');
        expect(active.status).toBe('running');
        await waiting();
        expect(await codeOf(waiting())).toBe('quota_exceeded');
        await move(store, second, 'failed');
        await waiting();
        // Without a bound (callers that do not ask for one), creation is never refused for waiting.
        await created(store, org.id);
      });

      it('scopes reads to the org', async () => {
        const store = await subject.create();
        const a = await newOrg(store);
        const b = await newOrg(store);
        const sandbox = await created(store, a.id);
        expect(await store.getSandbox(a.id, sandbox.id)).toEqual(sandbox);
        expect(await store.getSandbox(b.id, sandbox.id)).toBeUndefined();
        expect((await store.listSandboxes(b.id, {}, { limit: 10 })).items).toEqual([]);
      });

      it('lists with status, project and label filters and pages exactly', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const tagged: string[] = [];
        for (let i = 0; i < 7; i++) {
          const record = await created(store, org.id, {
            labels: i % 2 === 0 ? { team: 'a', tier: 'gold' } : { team: 'b' },
            projectId: i < 3 ? 'prj_x' : null,
          });
          if (i % 2 === 0) tagged.push(record.id);
        }
        const collect = async (filter: Parameters<Store['listSandboxes']>[1], limit: number) => {
          const ids: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await store.listSandboxes(org.id, filter, { cursor, limit });
            expect(page.items.length).toBeLessThanOrEqual(limit);
            ids.push(...page.items.map((s) => s.id));
            cursor = page.nextCursor ?? undefined;
          } while (cursor !== undefined);
          return ids;
        };
        expect(await collect({ labels: { team: 'a', tier: 'gold' } }, 2)).toEqual(tagged);
        expect((await collect({ projectId: 'prj_x' }, 10)).length).toBe(3);
        expect((await collect({ status: 'running' }, 10)).length).toBe(0);
        expect((await collect({}, 3)).length).toBe(7);
        const exact = await store.listSandboxes(org.id, {}, { limit: 7 });
        expect(exact.items.length).toBe(7);
        expect(exact.nextCursor).toBeNull();
      });

      it('refuses an update on a stale version or status as a conflict, writing nothing', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const sandbox = await created(store, org.id);
        const provisioning = await move(store, sandbox, 'provisioning');
        expect(provisioning.version).toBe(2);
        const headBefore = await store.auditHead(org.id);
        expect(await codeOf(move(store, sandbox, 'provisioning'))).toBe('conflict');
        expect(await codeOf(move(store, { ...provisioning, status: 'running' }, 'stopped'))).toBe('conflict');
        expect(await store.getSandbox(org.id, sandbox.id)).toEqual(provisioning);
        expect(await store.auditHead(org.id)).toEqual(headBefore);
        expect(await store.getUsage(org.id)).toMatchObject({ cpu: 1, sandboxes: 1 });
      });

      it('lists live sandboxes by status across orgs, oldest update first; terminal ones leave the index', async () => {
        const store = await subject.create();
        const a = await newOrg(store);
        const b = await newOrg(store);
        const first = await created(store, a.id, { updatedAt: '2026-01-01T00:00:00.000Z' });
        const second = await created(store, b.id, { updatedAt: '2026-01-02T00:00:00.000Z' });
        const queued = await store.listSandboxesByStatus('queued', { limit: 100 });
        const ids = queued.items.map((s) => s.id);
        expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
        const failed = await store.updateSandbox(
          second,
          { status: 'failed' },
          { audit: system('sandbox.failed') },
        );
        expect(
          (await store.listSandboxesByStatus('queued', { limit: 100 })).items.map((s) => s.id),
        ).not.toContain(failed.id);
        expect((await store.listSandboxesByStatus('failed', { limit: 100 })).items).toEqual([]);
      });
    });

    describe('lookups for the reconciler, and leases', () => {
      it('lists the live sandboxes of a pool and finds any sandbox by id alone', async () => {
        const store = await subject.create();
        const a = await newOrg(store);
        const b = await newOrg(store);
        const onPool = await move(store, await created(store, a.id), 'provisioning', 'pool-x');
        const otherOrg = await move(store, await created(store, b.id), 'provisioning', 'pool-x');
        await move(store, await created(store, a.id), 'provisioning', 'pool-y');
        const failed = await store.updateSandbox(
          await move(store, await created(store, a.id), 'provisioning', 'pool-x'),
          {
            status: 'failed',
          },
        );
        const ids = (await store.listSandboxesByPool('pool-x', { limit: 100 })).items.map((s) => s.id);
        expect(ids.sort()).toEqual([onPool.id, otherOrg.id].sort());
        expect((await store.findSandbox(otherOrg.id))?.orgId).toBe(b.id);
        expect((await store.findSandbox(failed.id))?.status).toBe('failed');
        expect(await store.findSandbox(newId('sandbox'))).toBeUndefined();
      });

      it('grants a lease to one owner at a time until it expires', async () => {
        const store = await subject.create();
        const name = `lease-${newId('key')}`;
        expect(
          await store.acquireLease(name, 'one', '2026-01-01T00:05:00.000Z', '2026-01-01T00:00:00.000Z'),
        ).toBe(true);
        expect(
          await store.acquireLease(name, 'two', '2026-01-01T00:06:00.000Z', '2026-01-01T00:01:00.000Z'),
        ).toBe(false);
        // The holder may renew; after expiry anyone may take it.
        expect(
          await store.acquireLease(name, 'one', '2026-01-01T00:07:00.000Z', '2026-01-01T00:02:00.000Z'),
        ).toBe(true);
        expect(
          await store.acquireLease(name, 'two', '2026-01-01T00:09:00.000Z', '2026-01-01T00:08:00.000Z'),
        ).toBe(true);
        await store.releaseLease(name, 'one');
        expect(
          await store.acquireLease(name, 'three', '2026-01-01T00:10:00.000Z', '2026-01-01T00:08:30.000Z'),
        ).toBe(false);
        await store.releaseLease(name, 'two');
        expect(
          await store.acquireLease(name, 'three', '2026-01-01T00:10:00.000Z', '2026-01-01T00:08:30.000Z'),
        ).toBe(true);
      });
    });

    describe('usage follows status in the same write', () => {
      it('reserves on activation, releases cpu and memory on stop, re-reserves on start, releases all on terminate', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        let s = await created(store, org.id, { resources: { cpu: 1.5, memoryMiB: 512, diskGiB: 7 } });
        expect(await store.getUsage(org.id)).toEqual({
          cpu: 0,
          memoryMiB: 0,
          diskGiB: 0,
          sandboxes: 0,
          snapshots: 0,
        });
        s = await move(store, s, 'provisioning');
        expect(await store.getUsage(org.id)).toEqual({
          cpu: 1.5,
          memoryMiB: 512,
          diskGiB: 7,
          sandboxes: 1,
          snapshots: 0,
        });
        expect(await store.getPoolUsage('p1')).toBe(1);
        s = await move(store, s, 'running');
        s = await move(store, s, 'stopped');
        expect(await store.getUsage(org.id)).toEqual({
          cpu: 0,
          memoryMiB: 0,
          diskGiB: 7,
          sandboxes: 1,
          snapshots: 0,
        });
        expect(await store.getPoolUsage('p1')).toBe(1);
        s = await move(store, s, 'running');
        expect(await store.getUsage(org.id)).toMatchObject({ cpu: 1.5, memoryMiB: 512 });
        s = await move(store, s, 'terminating');
        expect(await store.getUsage(org.id)).toEqual({
          cpu: 0,
          memoryMiB: 0,
          diskGiB: 0,
          sandboxes: 0,
          snapshots: 0,
        });
        expect(await store.getPoolUsage('p1')).toBe(0);
      });

      it('moves the pool slot when provisioning moves to another pool', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        let s = await created(store, org.id);
        s = await move(store, s, 'provisioning', 'p-a');
        s = await move(store, s, 'queued', 'p-a');
        s = await move(store, s, 'provisioning', 'p-b');
        expect(await store.getPoolUsage('p-a')).toBe(0);
        expect(await store.getPoolUsage('p-b')).toBe(1);
      });

      it('refuses a change past the quota with quota_exceeded and writes nothing', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxCPU: 2 });
        const big = await created(store, org.id, { resources: { cpu: 1.5, memoryMiB: 512, diskGiB: 1 } });
        const other = await created(store, org.id, { resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 } });
        await move(store, big, 'provisioning');
        const before = { usage: await store.getUsage(org.id), head: await store.auditHead(org.id) };
        const error = await move(store, other, 'provisioning').catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ApiError);
        expect(error).toMatchObject({ code: 'quota_exceeded', details: { field: 'cpu', limit: 2 } });
        expect(await store.getUsage(org.id)).toEqual(before.usage);
        expect(await store.auditHead(org.id)).toEqual(before.head);
        expect((await store.getSandbox(org.id, other.id))?.status).toBe('queued');
        expect(await store.getPoolUsage('p1')).toBe(1);
      });

      it('50 concurrent activations against a quota of 10: exactly 10 succeed', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxSandboxes: 10 });
        const sandboxes = await Promise.all(Array.from({ length: 50 }, () => created(store, org.id)));
        let peak = 0;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            peak = Math.max(peak, (await store.getUsage(org.id)).sandboxes);
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        })();
        const results = await Promise.all(sandboxes.map((s) => codeOf(move(store, s, 'provisioning'))));
        sampling = false;
        await sampler;
        expect(results.filter((r) => r === 'ok').length).toBe(10);
        expect(results.filter((r) => r !== 'ok').every((r) => r === 'quota_exceeded')).toBe(true);
        expect((await store.getUsage(org.id)).sandboxes).toBe(10);
        expect(peak).toBeLessThanOrEqual(10);
        expect((await verifyOrgChain(store, org.id)).ok).toBe(true);
      });

      it('concurrent start of stopped sandboxes respects the CPU quota', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxCPU: 4 });
        const stopped: SandboxRecord[] = [];
        for (let i = 0; i < 8; i++) {
          let s = await created(store, org.id);
          s = await move(store, s, 'provisioning');
          s = await move(store, s, 'running');
          // Stop each before starting the next: never more than one running while setting up.
          stopped.push(await move(store, s, 'stopped'));
        }
        expect((await store.getUsage(org.id)).cpu).toBe(0);
        const results = await Promise.all(stopped.map((s) => codeOf(move(store, s, 'running'))));
        expect(results.filter((r) => r === 'ok').length).toBe(4);
        expect((await store.getUsage(org.id)).cpu).toBe(4);
      });

      it('bounds a pool by its concurrency limit: the rest is insufficient_capacity', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const sandboxes = await Promise.all(Array.from({ length: 10 }, () => created(store, org.id)));
        const results = await Promise.all(
          sandboxes.map((s) => codeOf(move(store, s, 'provisioning', 'small', 3))),
        );
        expect(results.filter((r) => r === 'ok').length).toBe(3);
        expect(results.filter((r) => r !== 'ok').every((r) => r === 'insufficient_capacity')).toBe(true);
        expect(await store.getPoolUsage('small')).toBe(3);
        expect((await store.getUsage(org.id)).sandboxes).toBe(3);
      });
    });

    describe('snapshots', () => {
      const snapshotOf = (orgId: string, sandboxId = newId('sandbox')) => ({
        id: newId('snapshot'),
        orgId,
        projectId: null,
        sandboxId,
        pool: 'p1',
        backendRef: `ref-${newId('key')}`,
        kind: 'disk' as const,
        sizeBytes: 1024,
        status: 'ready' as 'ready' | 'creating',
        statusMessage: null,
        createdAt: new Date().toISOString(),
      });

      it('settles a creating snapshot once: ready keeps the slot, failed gives it back; deleting a failed one frees nothing', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxSnapshots: 2 });
        const taking = { ...snapshotOf(org.id), status: 'creating' as const, backendRef: '' };
        const doomed = { ...snapshotOf(org.id), status: 'creating' as const, backendRef: '' };
        await store.createSnapshot(taking, system('snapshot.created'));
        await store.createSnapshot(doomed, system('snapshot.created'));
        expect((await store.getUsage(org.id)).snapshots).toBe(2);
        const at = new Date().toISOString();
        const ready = await store.settleSnapshot(
          taking,
          { status: 'ready', statusMessage: null, backendRef: 'backend-1', sizeBytes: 7, updatedAt: at },
          system('snapshot.ready'),
        );
        expect(ready).toMatchObject({ status: 'ready', backendRef: 'backend-1', sizeBytes: 7 });
        expect(await store.getSnapshot(org.id, taking.id)).toMatchObject({
          status: 'ready',
          backendRef: 'backend-1',
        });
        // Only once: a second settle of the same record is a conflict, whatever it says.
        expect(
          await codeOf(
            store.settleSnapshot(
              taking,
              { status: 'failed', statusMessage: 'late', updatedAt: at },
              system('x'),
            ),
          ),
        ).toBe('conflict');
        await store.settleSnapshot(
          doomed,
          { status: 'failed', statusMessage: 'no', updatedAt: at },
          system('snapshot.failed'),
        );
        expect((await store.getUsage(org.id)).snapshots).toBe(1);
        await store.deleteSnapshot(org.id, doomed.id, system('snapshot.deleted'));
        expect((await store.getUsage(org.id)).snapshots).toBe(1);
        await store.deleteSnapshot(org.id, taking.id, system('snapshot.deleted'));
        expect((await store.getUsage(org.id)).snapshots).toBe(0);
        expect(
          await codeOf(
            store.settleSnapshot(
              doomed,
              { status: 'failed', statusMessage: 'gone', updatedAt: at },
              system('x'),
            ),
          ),
        ).toBe('not_found');
      });

      it('counts snapshots against maxSnapshots: 10 concurrent creates, a quota of 3, exactly 3 succeed', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxSnapshots: 3 });
        const results = await Promise.all(
          Array.from({ length: 10 }, () =>
            codeOf(store.createSnapshot(snapshotOf(org.id), system('snapshot.created'))),
          ),
        );
        expect(results.filter((r) => r === 'ok').length).toBe(3);
        expect(results.filter((r) => r !== 'ok').every((r) => r === 'quota_exceeded')).toBe(true);
        expect((await store.getUsage(org.id)).snapshots).toBe(3);
        expect((await store.listSnapshots(org.id, { limit: 10 })).items.length).toBe(3);
      });

      it('gives the slot back on delete, scopes reads to the org, and refuses unknown ids', async () => {
        const store = await subject.create();
        const org = await newOrg(store, { maxSnapshots: 1 });
        const other = await newOrg(store);
        const first = snapshotOf(org.id);
        await store.createSnapshot(first, system('snapshot.created'));
        expect(await codeOf(store.createSnapshot(snapshotOf(org.id), system('snapshot.created')))).toBe(
          'quota_exceeded',
        );
        expect(await store.getSnapshot(org.id, first.id)).toEqual(first);
        expect(await store.getSnapshot(other.id, first.id)).toBeUndefined();
        expect(await codeOf(store.deleteSnapshot(other.id, first.id, system('snapshot.deleted')))).toBe(
          'not_found',
        );
        expect(await store.deleteSnapshot(org.id, first.id, system('snapshot.deleted'))).toEqual(first);
        expect((await store.getUsage(org.id)).snapshots).toBe(0);
        expect(await codeOf(store.deleteSnapshot(org.id, first.id, system('snapshot.deleted')))).toBe(
          'not_found',
        );
        await store.createSnapshot(snapshotOf(org.id), system('snapshot.created'));
        const actions = (await store.listAudit(org.id, { limit: 10 })).items.map((e) => e.action);
        expect(actions).toEqual(['org.created', 'snapshot.created', 'snapshot.deleted', 'snapshot.created']);
      });
    });

    describe('idempotency', () => {
      it('returns the first sandbox for a repeat with the same body; another body is a conflict', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const claim = {
          key: 'req-1',
          requestHash: 'h1',
          expiresAt: new Date(Date.now() + 60_000).toISOString(),
        };
        const first = sandboxRecord(org.id);
        expect(await store.createSandbox(first, system('sandbox.created'), claim)).toEqual({
          sandbox: first,
          replayed: false,
        });
        const again = await store.createSandbox(sandboxRecord(org.id), system('sandbox.created'), claim);
        expect(again).toEqual({ sandbox: first, replayed: true });
        expect(
          await codeOf(
            store.createSandbox(sandboxRecord(org.id), system('x'), { ...claim, requestHash: 'h2' }),
          ),
        ).toBe('conflict');
        expect((await store.listSandboxes(org.id, {}, { limit: 10 })).items.length).toBe(1);
      });

      it('treats an expired record as absent, whatever TTL deletion has done', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const expired = {
          key: 'req-2',
          requestHash: 'h1',
          expiresAt: new Date(Date.now() - 1000).toISOString(),
        };
        await store.createSandbox(sandboxRecord(org.id), system('sandbox.created'), expired);
        const fresh = sandboxRecord(org.id);
        const result = await store.createSandbox(fresh, system('sandbox.created'), {
          ...expired,
          requestHash: 'other',
        });
        expect(result).toEqual({ sandbox: fresh, replayed: false });
      });
    });

    describe('audit chain', () => {
      it('appends concurrently without gaps or forks and pages in order', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        await Promise.all(
          Array.from({ length: 40 }, (_, i) => store.appendAudit(org.id, { ...admin, target: `t${i}` })),
        );
        const seqs: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listAudit(org.id, { cursor, limit: 7 });
          seqs.push(...page.items.map((e) => e.seq));
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        expect(seqs).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
        expect(await verifyOrgChain(store, org.id)).toEqual({ ok: true, checked: 41 });
        expect((await store.auditHead(org.id)).seq).toBe(41);
      });

      it('keeps one chain when two handles on the same state append at once', async () => {
        const first = await subject.create();
        const org = await newOrg(first);
        const second = await subject.create({ shared: true });
        await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            (i % 2 === 0 ? first : second).appendAudit(org.id, { ...admin, target: `t${i}` }),
          ),
        );
        expect(await verifyOrgChain(first, org.id)).toEqual({ ok: true, checked: 31 });
        expect(await verifyOrgChain(second, org.id)).toEqual({ ok: true, checked: 31 });
      });

      it('records each change with actor, action, target and the chain fields', async () => {
        const store = await subject.create();
        const org = await newOrg(store);
        const s = await created(store, org.id);
        await store.updateSandbox(
          s,
          { status: 'provisioning', pool: 'p1' },
          {
            audit: {
              actor: 'key_abc',
              action: 'sandbox.provisioning',
              target: s.id,
              details: { from: 'queued' },
            },
          },
        );
        const events = (await store.listAudit(org.id, { limit: 10 })).items;
        expect(events.map((e) => e.action)).toEqual([
          'org.created',
          'sandbox.created',
          'sandbox.provisioning',
        ]);
        const last = events.at(-1);
        expect(last).toMatchObject({
          seq: 3,
          actor: 'key_abc',
          target: s.id,
          details: { from: 'queued' },
          orgId: org.id,
        });
        expect(last?.prevHash).toBe(events[1]?.hash);
        expect(last?.hash).toMatch(/^[0-9a-f]{64}$/);
      });

      describe('detects tampering at the right seq', () => {
        async function chainOf(length: number) {
          const store = await subject.create();
          const org = await newOrg(store);
          for (let i = 1; i < length; i++) await store.appendAudit(org.id, { ...admin, target: `t${i}` });
          // Reading the head links anything still pending, so the tampering below hits linked events.
          expect((await store.auditHead(org.id)).seq).toBe(length);
          return { store, org, tamper: subject.tamper(store) };
        }

        it('a rewritten hash', async () => {
          const { store, org, tamper } = await chainOf(6);
          await tamper.rewrite(org.id, 3, (e) => ({ ...e, hash: 'f'.repeat(64) }));
          expect((await verifyOrgChain(store, org.id)).firstBroken?.seq).toBe(3);
        });

        it('changed details', async () => {
          const { store, org, tamper } = await chainOf(6);
          await tamper.rewrite(org.id, 4, (e) => ({ ...e, details: { forged: true } }));
          expect(await verifyOrgChain(store, org.id)).toMatchObject({
            ok: false,
            checked: 3,
            firstBroken: { seq: 4, reason: 'hash does not match the event content' },
          });
        });

        it('two events swapped', async () => {
          const { store, org, tamper } = await chainOf(6);
          const events = (await store.listAudit(org.id, { limit: 10 })).items;
          const [third, fourth] = [events[2], events[3]];
          if (third === undefined || fourth === undefined) throw new Error('short chain');
          await tamper.rewrite(org.id, 3, () => ({ ...fourth, seq: 3 }));
          await tamper.rewrite(org.id, 4, () => ({ ...third, seq: 4 }));
          expect((await verifyOrgChain(store, org.id)).firstBroken?.seq).toBe(3);
        });

        it('an event deleted from the middle', async () => {
          const { store, org, tamper } = await chainOf(6);
          await tamper.remove(org.id, 2);
          expect((await verifyOrgChain(store, org.id)).firstBroken?.seq).toBe(2);
        });

        it('the last event deleted', async () => {
          const { store, org, tamper } = await chainOf(6);
          await tamper.remove(org.id, 6);
          expect((await verifyOrgChain(store, org.id)).firstBroken?.seq).toBe(6);
        });
      });
    });
  });
}
