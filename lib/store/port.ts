import type { AuditStore } from './audit/port.ts';
import type { LeaseStore } from './leases/port.ts';
import type { PoolStore } from './pools/port.ts';
import type { SandboxStore } from './sandboxes/port.ts';
import type { SnapshotStore } from './snapshots/port.ts';
import type { TenancyStore } from './tenancy/port.ts';
import type { WarmStore } from './warm/port.ts';
import type { WebhookStore } from './webhooks/port.ts';

/**
 * The state port. Every implementation (memory, DynamoDB) passes the same conformance suite.
 *
 * - Every sandbox update is conditional on the status and version the caller read; a lost race is a
 *   `conflict` error, never a silent overwrite.
 * - Usage follows status (lib/quotas/usage.ts holdingsOf): the org usage aggregate and the pool's slot count
 *   change in the same atomic write as the sandbox (the write's effects: lib/store/sandboxes/write-effects.ts); an increase past the org quota is `quota_exceeded`,
 *   past the pool's limit `insufficient_capacity`, and then nothing is written.
 * - Budgets follow the sandbox's billing (lib/budgets/billing.ts ledgerChanges): the month's ledgers of
 *   its org and its project change in the same atomic write; a charge past what is left of a budget is
 *   `quota_exceeded` (details.field `budget`), and then nothing is written.
 * - Audit events are appended to the org's hash chain in the same atomic write as the change they record.
 */
export interface Store
  extends TenancyStore,
    WebhookStore,
    PoolStore,
    SandboxStore,
    SnapshotStore,
    AuditStore,
    LeaseStore,
    WarmStore {}
