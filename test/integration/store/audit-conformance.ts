import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../../lib/audit/chain.ts';
import { verifyOrgChain } from '../../../lib/tenancy/audit-trail.ts';
import { admin, created, newOrg, type StoreUnderTest } from './store-under-test.ts';

/** The audit aggregate's part of the store conformance suite (lib/store/audit/). */
export function auditConformance(subject: StoreUnderTest): void {
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
      expect(events.map((e) => e.action)).toEqual(['org.created', 'sandbox.created', 'sandbox.provisioning']);
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

      // Each field a change records is sealed by its hash: a rewrite of any one is found at that event.
      it.each([
        ['at', (e: AuditEvent) => ({ ...e, at: '2020-01-01T00:00:00.000Z' })],
        ['actor', (e: AuditEvent) => ({ ...e, actor: 'key_forged' })],
        ['action', (e: AuditEvent) => ({ ...e, action: 'sandbox.forged' })],
        ['target', (e: AuditEvent) => ({ ...e, target: 'sbx_forged' })],
        ['details (a value)', (e: AuditEvent) => ({ ...e, details: { ...e.details, n: 2 } })],
        ['details (a key added)', (e: AuditEvent) => ({ ...e, details: { ...e.details, extra: null } })],
        ['orgId', (e: AuditEvent) => ({ ...e, orgId: 'org_01ARZ3NDEKTSV4RRFFQ69G5FAV' })],
      ] as const)('a changed %s', async (_field, change) => {
        const { store, org, tamper } = await chainOf(6);
        await tamper.rewrite(org.id, 5, change);
        expect(await verifyOrgChain(store, org.id)).toMatchObject({
          ok: false,
          checked: 4,
          firstBroken: { seq: 5, reason: 'hash does not match the event content' },
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
}
