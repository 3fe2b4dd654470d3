import { describe } from 'vitest';
import { auditConformance } from './audit-conformance.ts';
import { leasesConformance } from './leases-conformance.ts';
import { poolsConformance } from './pools-conformance.ts';
import { sandboxesConformance } from './sandboxes-conformance.ts';
import { snapshotsConformance } from './snapshots-conformance.ts';
import type { StoreUnderTest } from './store-under-test.ts';
import { tenancyConformance } from './tenancy-conformance.ts';
import { warmConformance } from './warm-conformance.ts';

/** The behaviour every Store implementation must have, aggregate by aggregate; run against each in test/integration/store/store.test.ts. */
export function storeConformance(name: string, subject: StoreUnderTest): void {
  describe(`Store conformance: ${name}`, () => {
    tenancyConformance(subject);
    poolsConformance(subject);
    sandboxesConformance(subject);
    snapshotsConformance(subject);
    auditConformance(subject);
    leasesConformance(subject);
    warmConformance(subject);
  });
}
