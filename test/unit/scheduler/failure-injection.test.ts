import { describe, expect, it } from 'vitest';
import { FakeAdapter } from '../../../adapters/fake/fake-adapter.ts';
import { buildPools } from '../../../adapters/registry.ts';
import { parseConfig } from '../../../lib/config.ts';
import { createControlPlane } from '../../../lib/control-plane.ts';
import { silentLog } from '../../../lib/log.ts';
import { holdingsOf, round } from '../../../lib/quotas/usage.ts';
import { provisionSandbox } from '../../../lib/scheduler/provision.ts';
import { terminateSandbox } from '../../../lib/scheduler/terminate.ts';
import { memoryStore } from '../../../lib/store/memory.ts';
import type { Store } from '../../../lib/store/port.ts';
import type { Principal } from '../../../lib/tenancy/auth.ts';
import { RecordingQueue } from '../../helpers/plane.ts';
import { orgPrincipal } from '../../helpers/records.ts';

/** A store whose `failAt`-th write throws before reaching the underlying store. */
function failingStore(inner: Store, failAt: number): Store & { writes: number } {
  const writes = { count: 0 };
  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      writes.count++;
      if (writes.count === failAt) throw new Error(`injected failure at write ${failAt}`);
      return fn(...args);
    };
  const overrides: Record<string, unknown> = {
    createSandbox: wrap(inner.createSandbox.bind(inner)),
    updateSandbox: wrap(inner.updateSandbox.bind(inner)),
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'writes') return writes.count;
      if (typeof property === 'string' && property in overrides) return overrides[property];
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as Store & { writes: number };
}

/** Usage must equal what the stored records hold, whatever failed on the way. */
async function expectUsageMatchesRecords(store: Store, orgId: string) {
  const records = (await store.listSandboxes(orgId, {}, { limit: 100 })).items;
  const held = records.map((r) => holdingsOf(r.status, r.resources));
  const usage = await store.getUsage(orgId);
  expect(usage.cpu).toBe(round(held.reduce((sum, h) => sum + h.cpu, 0)));
  expect(usage.memoryMiB).toBe(held.reduce((sum, h) => sum + h.memoryMiB, 0));
  expect(usage.diskGiB).toBe(held.reduce((sum, h) => sum + h.diskGiB, 0));
  expect(usage.sandboxes).toBe(held.reduce((sum, h) => sum + h.sandboxes, 0));
  const byPool = new Map<string, number>();
  for (const [i, r] of records.entries()) {
    if (r.pool !== null) byPool.set(r.pool, (byPool.get(r.pool) ?? 0) + (held[i]?.poolSlot ?? 0));
  }
  for (const [pool, slots] of byPool) expect(await store.getPoolUsage(pool)).toBe(slots);
}

describe('a failed write never leaves usage and records disagreeing', () => {
  // create, provisioning, running, terminating, terminated: five writes in a clean lifecycle.
  it.each([1, 2, 3, 4, 5])(
    'with the lifecycle’s write %i failing, then retried to the end',
    async (failAt) => {
      const inner = memoryStore();
      const store = failingStore(inner, failAt);
      const fake = new FakeAdapter();
      const config = parseConfig({
        devMode: true,
        pools: [{ name: 'fake', adapter: 'fake', maxConcurrency: 5 }],
      });
      const plane = createControlPlane({
        config,
        store,
        queue: new RecordingQueue(),
        pools: await buildPools(config, { log: silentLog, adapters: { fake } }),
        log: silentLog,
        adminKey: 'k',
      });
      const org = await plane.tenancy.createOrg({ name: 'faults' });
      const principal: Extract<Principal, { kind: 'org' }> = orgPrincipal(org.id);
      const attempt = async <T>(work: () => Promise<T>): Promise<T | undefined> => {
        try {
          return await work();
        } catch {
          await expectUsageMatchesRecords(inner, org.id);
          return undefined;
        }
      };

      const created =
        (await attempt(() => plane.sandboxes.create(principal, {}))) ??
        (await plane.sandboxes.create(principal, {}));
      const message = { sandboxId: created.sandbox.id, orgId: org.id };
      for (let i = 0; i < 5; i++) {
        const record = await inner.getSandbox(org.id, message.sandboxId);
        if (record?.status === 'running') break;
        await attempt(() => provisionSandbox(plane, message));
        await expectUsageMatchesRecords(inner, org.id);
      }
      expect((await inner.getSandbox(org.id, message.sandboxId))?.status).toBe('running');
      expect(fake.instanceCount()).toBe(1);
      await expectUsageMatchesRecords(inner, org.id);

      for (let i = 0; i < 3; i++) {
        const record = await inner.getSandbox(org.id, message.sandboxId);
        if (record?.status !== 'running') break;
        await attempt(() => plane.sandboxes.delete(principal, message.sandboxId));
      }
      for (let i = 0; i < 3; i++) {
        const record = await inner.getSandbox(org.id, message.sandboxId);
        if (record?.status === 'terminated') break;
        await attempt(() => terminateSandbox(plane, message, 1));
      }
      expect((await inner.getSandbox(org.id, message.sandboxId))?.status).toBe('terminated');
      expect(fake.instanceCount()).toBe(0);
      await expectUsageMatchesRecords(inner, org.id);
      expect(await inner.getUsage(org.id)).toEqual({
        cpu: 0,
        memoryMiB: 0,
        diskGiB: 0,
        sandboxes: 0,
        snapshots: 0,
      });
      expect(await inner.getPoolUsage('fake')).toBe(0);
      expect(store.writes).toBeGreaterThanOrEqual(failAt);
    },
  );
});
