import { describe, expect, it } from 'vitest';
import { newId } from '../../../lib/ids.ts';
import { codeOf, newOrg, type StoreUnderTest, system } from './store-under-test.ts';

/** The snapshots aggregate's part of the store conformance suite (lib/store/snapshots/). */
export function snapshotsConformance(subject: StoreUnderTest): void {
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
}
