import { type LedgerChange, ledgerChanges } from '../../budgets/billing.ts';
import { type LedgerOwner, ledgerOwnersOf } from '../../budgets/ledger.ts';
import { type Usage, usageDelta } from '../../quotas/usage.ts';
import type { SandboxRecord } from '../records.ts';
import { isWaiting, waitsOnPools } from './port.ts';

/**
 * What a sandbox write changes beside its record, computed once here for both stores: each store only
 * executes it (DynamoDB as conditional updates in the record's transaction, memory as checks then sets),
 * and refuses it the same way where a limit would be crossed.
 */
export interface SandboxWriteEffects {
  orgId: string;
  sandboxId: string;
  /** The org's usage change; an increase must fit the org's quota. */
  usage: Omit<Usage, 'snapshots'>;
  /** The org's count of waiting (queued or provisioning) sandboxes: +1, -1 or 0. */
  waiting: number;
  /**
   * The installation's count of sandboxes waiting on the pools (any org): +1, -1 or 0. A released slot
   * wakes them; with none counted, nobody is looked for.
   */
  waitingOnPools: number;
  /** Pool slots taken (+) and released (-); a slot taken must stay within `limit` (0: no limit). */
  poolSlots: { pool: string; change: number; limit: number }[];
  /** The budget ledgers the sandbox's billing change moves, per owner and month; a charge must fit. */
  ledgers: { owner: LedgerOwner; change: LedgerChange }[];
}

/**
 * The effects of writing `to` over `from` (undefined: a new sandbox, which held nothing and waited
 * nowhere). `poolLimit` is the concurrency limit of `to`'s pool, which a slot taken there must respect.
 */
export function sandboxWriteEffects(
  from: SandboxRecord | undefined,
  to: SandboxRecord,
  poolLimit = 0,
): SandboxWriteEffects {
  const before = from ?? { status: 'queued' as const, resources: to.resources, pool: null, billing: null };
  const delta = usageDelta(before, to);
  return {
    orgId: to.orgId,
    sandboxId: to.id,
    usage: delta.org,
    waiting: Number(isWaiting(to.status)) - (from === undefined ? 0 : Number(isWaiting(from.status))),
    waitingOnPools: Number(waitsOnPools(to)) - (from === undefined ? 0 : Number(waitsOnPools(from))),
    poolSlots: Object.entries(delta.pools).map(([pool, change]) => ({
      pool,
      change,
      limit: pool === to.pool ? poolLimit : 0,
    })),
    ledgers: ledgerChanges(before.billing, to.billing).flatMap((change) =>
      ledgerOwnersOf(to).map((owner) => ({ owner, change })),
    ),
  };
}
