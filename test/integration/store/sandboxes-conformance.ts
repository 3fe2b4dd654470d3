import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import { envSchema, labelsSchema, recordLimits } from '../../../lib/schemas/common.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { SandboxRecord } from '../../../lib/store/records.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { sandboxRecord } from '../../helpers/records.ts';
import { codeOf, created, move, newOrg, type StoreUnderTest, system } from './store-under-test.ts';

/** The sandboxes aggregate's part of the store conformance suite (lib/store/sandboxes/). */
export function sandboxesConformance(subject: StoreUnderTest): void {
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

  describe('lookups for the reconciler', () => {
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

    it("keeps a key to its org and to its scope: another org's, or another project's, same key makes its own", async () => {
      const store = await subject.create();
      const [one, two] = [await newOrg(store), await newOrg(store)];
      // The service scopes a key by the caller: `org/<key>` for an org-wide key, `<project>/<key>` for a
      // project's (lib/sandboxes/service.ts); the store keeps each org's apart.
      const claim = (key: string) => ({
        key,
        requestHash: 'same-body',
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      });
      const first = sandboxRecord(one.id);
      await store.createSandbox(first, system('sandbox.created'), claim('org/k'));
      const otherOrg = sandboxRecord(two.id);
      expect(await store.createSandbox(otherOrg, system('sandbox.created'), claim('org/k'))).toEqual({
        sandbox: otherOrg,
        replayed: false,
      });
      const project = sandboxRecord(one.id, { projectId: 'prj_a' });
      expect(await store.createSandbox(project, system('sandbox.created'), claim('prj_a/k'))).toEqual({
        sandbox: project,
        replayed: false,
      });
      // Each still replays its own, and only its own.
      for (const [orgId, key, expected] of [
        [one.id, 'org/k', first],
        [two.id, 'org/k', otherOrg],
        [one.id, 'prj_a/k', project],
      ] as const) {
        expect(
          await store.createSandbox(sandboxRecord(orgId), system('sandbox.created'), claim(key)),
        ).toEqual({
          sandbox: expected,
          replayed: true,
        });
      }
      expect((await store.listSandboxes(one.id, {}, { limit: 10 })).items).toHaveLength(2);
      expect((await store.listSandboxes(two.id, {}, { limit: 10 })).items).toHaveLength(1);
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
}
