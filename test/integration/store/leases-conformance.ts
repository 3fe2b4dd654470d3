import { describe, expect, it } from 'vitest';
import { newId } from '../../../lib/ids.ts';
import type { StoreUnderTest } from './store-under-test.ts';

/** The leases aggregate's part of the store conformance suite (lib/store/leases/). */
export function leasesConformance(subject: StoreUnderTest): void {
  describe('leases', () => {
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
}
