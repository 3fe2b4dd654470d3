import { describe, expect, it } from 'vitest';
import { newId } from '../../../lib/ids.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { WarmRecord } from '../../../lib/store/records.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { sandboxRecord } from '../../helpers/records.ts';
import { codeOf, newOrg, type StoreUnderTest, system } from './store-under-test.ts';

function warmRecord(pool: string, overrides: Partial<WarmRecord> = {}): WarmRecord {
  const now = new Date().toISOString();
  return {
    id: newId('sandbox'),
    pool,
    shape: 'shape-a',
    template: null,
    resources: { cpu: 1, memoryMiB: 1024, diskGiB: 10 },
    network: null,
    status: 'ready',
    backendRef: `ref-${Math.random()}`,
    version: 1,
    createdAt: now,
    readyAt: now,
    updatedAt: now,
    ...overrides,
  };
}

/** A sandbox as a claim records it: running on the warm instance, with its id. */
function claimed(orgId: string, warm: WarmRecord, env: Record<string, string> = {}) {
  const at = new Date().toISOString();
  return sandboxRecord(orgId, {
    id: warm.id,
    status: 'running',
    pool: warm.pool,
    backendRef: warm.backendRef,
    env,
    expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    warm: { claimedAt: at, readyAt: warm.readyAt ?? at },
  });
}

/** The warm instances aggregate's part of the store conformance suite (lib/store/warm/). */
export function warmConformance(subject: StoreUnderTest): void {
  describe('warm instances', () => {
    it('records them per pool with a slot each, within the pool limit; removing one gives its slot back', async () => {
      const store = await subject.create();
      const pool = `warm-${Math.random().toString(36).slice(2, 10)}`;
      const first = warmRecord(pool, { status: 'provisioning', backendRef: null, readyAt: null });
      await store.putWarm(first, { poolLimit: 2 });
      const second = warmRecord(pool);
      await store.putWarm(second, { poolLimit: 2 });
      expect(await codeOf(store.putWarm(warmRecord(pool), { poolLimit: 2 }))).toBe('insufficient_capacity');
      expect(await codeOf(store.putWarm(first))).toBe('conflict');
      expect(await store.getPoolUsage(pool)).toBe(2);
      expect((await store.listWarm(pool)).map((record) => record.id)).toEqual([first.id, second.id]);
      expect(await store.listWarm('another-pool')).toEqual([]);

      const ready = await store.updateWarm(first, { status: 'ready', backendRef: 'ref-1', readyAt: 'now' });
      expect(ready).toMatchObject({ status: 'ready', backendRef: 'ref-1', version: 2 });
      // Conditional on the version read, like every write.
      expect(await codeOf(store.updateWarm(first, { status: 'ready' }))).toBe('conflict');
      expect(await store.removeWarm(first)).toBe(false);
      expect(await store.removeWarm(ready)).toBe(true);
      expect(await store.removeWarm(ready)).toBe(false);
      expect(await store.getPoolUsage(pool)).toBe(1);
      expect((await store.listWarm(pool)).map((record) => record.id)).toEqual([second.id]);
    });

    it('a claim records the sandbox running on the instance with its reservation, audit and key, and removes the instance', async () => {
      const store = await subject.create();
      const org = await newOrg(store, { maxSandboxes: 5 });
      const pool = `warm-${Math.random().toString(36).slice(2, 10)}`;
      const warm = warmRecord(pool);
      await store.putWarm(warm, { poolLimit: 1 });
      const sandbox = claimed(org.id, warm, { TOKEN: 'one' });
      const idempotency = {
        key: 'org/k1',
        requestHash: 'h1',
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      };
      const result = await store.claimWarm(warm, sandbox, system('sandbox.created'), idempotency);
      expect(result).toEqual({ kind: 'claimed', sandbox });
      expect(await store.getSandbox(org.id, warm.id)).toEqual(sandbox);
      expect(await store.findSandbox(warm.id)).toEqual(sandbox);
      expect(await store.listWarm(pool)).toEqual([]);
      // The instance's slot became the sandbox's: the pool counts one, the org one running sandbox.
      expect(await store.getPoolUsage(pool)).toBe(1);
      expect((await store.getUsage(org.id)).sandboxes).toBe(1);
      // org.created, then the claim's sandbox.created, in one chain that verifies.
      expect(await verifyOrgChain(store, org.id)).toEqual({ ok: true, checked: 2 });
      expect((await store.listAudit(org.id, { limit: 10 })).items.map((event) => event.action)).toContain(
        'sandbox.created',
      );
      // The same key and body again: the first sandbox, whatever instance is offered.
      const other = warmRecord(pool);
      await store.putWarm(other);
      const again = await store.claimWarm(
        other,
        claimed(org.id, other),
        system('sandbox.created'),
        idempotency,
      );
      expect(again).toEqual({ kind: 'replayed', sandbox });
      expect((await store.listWarm(pool)).map((record) => record.id)).toEqual([other.id]);
      // A claim of an instance already claimed, or changed since it was read, writes nothing.
      expect(await store.claimWarm(warm, claimed(org.id, warm), system('sandbox.created'))).toEqual({
        kind: 'taken',
      });
      const provisioning = warmRecord(pool, { status: 'provisioning' });
      await store.putWarm(provisioning);
      expect(
        await store.claimWarm(provisioning, claimed(org.id, provisioning), system('sandbox.created')),
      ).toEqual({ kind: 'taken' });
      expect(await store.getSandbox(org.id, provisioning.id)).toBeUndefined();
      expect((await store.getUsage(org.id)).sandboxes).toBe(1);
    });

    it('concurrent claims of one instance: exactly one wins, the others find it taken', async () => {
      const store = await subject.create();
      const second: Store = await subject.create({ shared: true });
      const org = await newOrg(store);
      const pool = `warm-${Math.random().toString(36).slice(2, 10)}`;
      const warm = warmRecord(pool);
      await store.putWarm(warm);
      // Eight creates, through two handles on the same state, each with its own tenant env.
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          (index % 2 === 0 ? store : second).claimWarm(
            warm,
            claimed(org.id, warm, { SECRET: `tenant-${index}` }),
            system('sandbox.created'),
          ),
        ),
      );
      expect(results.filter((result) => result.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((result) => result.kind === 'taken')).toHaveLength(7);
      const winner = results.find((result) => result.kind === 'claimed');
      expect(await store.getSandbox(org.id, warm.id)).toEqual(winner?.kind === 'claimed' && winner.sandbox);
      expect((await store.getUsage(org.id)).sandboxes).toBe(1);
      expect(await store.getPoolUsage(pool)).toBe(1);
    });

    it('a claim the org’s quota refuses writes nothing and leaves the instance claimable', async () => {
      const store = await subject.create();
      const org = await newOrg(store, { maxSandboxes: 1 });
      const pool = `warm-${Math.random().toString(36).slice(2, 10)}`;
      const [one, two] = [warmRecord(pool), warmRecord(pool)];
      await store.putWarm(one);
      await store.putWarm(two);
      await store.claimWarm(one, claimed(org.id, one), system('sandbox.created'));
      expect(await codeOf(store.claimWarm(two, claimed(org.id, two), system('sandbox.created')))).toBe(
        'quota_exceeded',
      );
      expect((await store.listWarm(pool)).map((record) => record.id)).toEqual([two.id]);
      expect(await store.getSandbox(org.id, two.id)).toBeUndefined();
      expect(await store.getPoolUsage(pool)).toBe(2);
    });
  });
}
