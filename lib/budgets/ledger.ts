import { errors } from '../errors.ts';
import type { BudgetView } from '../schemas/tenancy.ts';
import * as z from '../zod.ts';
import { fromMicros, maxBudget, toMicros } from './prices.ts';

/** PUT /v1/admin/orgs/{id}/budget and /v1/admin/orgs/{id}/projects/{projectId}/budget. */
export const setBudgetSchema = z.strictObject({
  /** Per calendar month (UTC), in the currency the pools' prices are in; null: no budget. */
  monthly: z.nullable(z.number().check(z.gte(0), z.lte(maxBudget))),
});

/** Whose budget a ledger counts against: the org's, or one of its projects'. */
export type BudgetScope = 'org' | 'project';

/** A month's ledger of one budget: micros held by live sandboxes and micros their settlements spent. */
export interface Ledger {
  reserved: number;
  spent: number;
}

export const emptyLedger: Ledger = { reserved: 0, spent: 0 };

/**
 * The same "unlimited" both stores start a ledger's headroom at when a scope has no budget: an
 * integer JavaScript and DynamoDB both keep exact, far above any budget.
 */
export const unlimitedMicros = Number.MAX_SAFE_INTEGER;

export function monthlyMicros(monthly: number | null): number | null {
  return monthly === null ? null : toMicros(monthly);
}

/** The refusal of a write whose charge does not fit what is left of a budget. */
export function budgetExceeded(over: {
  scope: BudgetScope;
  month: string;
  limit: number;
  used: number;
  requested: number;
}) {
  const owner = over.scope === 'org' ? "the org's" : "the project's";
  return errors.quotaExceeded(
    `${owner} budget for ${over.month} would be exceeded: ${fromMicros(over.used)} of ${fromMicros(over.limit)} is reserved or spent, ${fromMicros(over.requested)} more was asked`,
    {
      field: 'budget',
      scope: over.scope,
      month: over.month,
      limit: fromMicros(over.limit),
      used: fromMicros(over.used),
      requested: fromMicros(over.requested),
    },
  );
}

export function budgetView(month: string, limit: number | null, ledger: Ledger): BudgetView {
  return {
    month,
    monthly: limit === null ? null : fromMicros(limit),
    spent: fromMicros(ledger.spent),
    reserved: fromMicros(ledger.reserved),
    left: limit === null ? null : fromMicros(Math.max(0, limit - ledger.reserved - ledger.spent)),
  };
}

/** A budget's owner: the org (projectId null) or one of its projects. */
export interface LedgerOwner {
  orgId: string;
  projectId: string | null;
}

/** The budgets a sandbox counts against: its org's, and its project's when it has one. */
export function ledgerOwnersOf(record: { orgId: string; projectId: string | null }): LedgerOwner[] {
  return [
    { orgId: record.orgId, projectId: null },
    ...(record.projectId === null ? [] : [{ orgId: record.orgId, projectId: record.projectId }]),
  ];
}
