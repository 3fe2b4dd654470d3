import type { SandboxCost } from '../schemas/sandbox-parts.ts';
import type { SandboxStatus } from '../schemas/sandbox-status.ts';
import * as z from '../zod.ts';
import { fromMicros, maxRate, type SandboxRates, sandboxRatesSchema } from './prices.ts';

/**
 * What a sandbox owes and holds of its budgets, kept on its record so that every write's budget effect
 * is the difference between two records (ledgerChanges), written in the same transaction as the move:
 * - at activation (queued -> provisioning) its maximum cost is reserved: the price per create plus its
 *   TTL at its dearest rate;
 * - each move adds the time spent in the state it leaves (capped at expiresAt: a sweep that ends a
 *   sandbox late never bills the lag);
 * - a TTL change re-reserves what was billed so far plus the new remaining time at the dearest rate;
 * - termination (or failure) settles: the reservation goes, the actual cost is spent. The actual cost
 *   never exceeds the reservation, so a settlement only ever gives budget back.
 */
export const sandboxBillingSchema = z.object({
  /** The calendar month (UTC, YYYY-MM) whose budget holds the reservation and receives the spend. */
  month: z.string(),
  rates: sandboxRatesSchema,
  /** Whether the sandbox reached running: only then is the price per create due. */
  created: z.boolean(),
  runningMs: z.int(),
  pausedMs: z.int(),
  stoppedMs: z.int(),
  /** When the stretch being billed now began (the last move). */
  since: z.nullable(z.string()),
  /** Micros held of the budgets now. */
  reserved: z.int(),
  /** Micros spent: set once, at settlement. */
  spent: z.int(),
  settledAt: z.nullable(z.string()),
});
export type SandboxBilling = z.infer<typeof sandboxBillingSchema>;

type BilledState = 'running' | 'paused' | 'stopped';

/** Which rate a status bills at: the instance is held at full size while it moves between states. */
export function billedStateOf(status: SandboxStatus): BilledState | null {
  switch (status) {
    case 'running':
    case 'starting':
    case 'stopping':
    case 'pausing':
    case 'resuming':
      return 'running';
    case 'paused':
      return 'paused';
    case 'stopped':
      return 'stopped';
    default:
      return null;
  }
}

export function monthOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** The month after `month` (YYYY-MM). */
export function nextMonth(month: string): string {
  const [year, monthNumber] = month.split('-').map(Number) as [number, number];
  return monthNumber === 12 ? `${year + 1}-01` : `${year}-${String(monthNumber + 1).padStart(2, '0')}`;
}

/** The reservation a sandbox takes when it is activated: the most it can cost over its TTL. */
export function reservationFor(rates: SandboxRates, ttlSeconds: number, now: Date): SandboxBilling {
  return {
    month: monthOf(now),
    rates,
    created: false,
    runningMs: 0,
    pausedMs: 0,
    stoppedMs: 0,
    since: now.toISOString(),
    reserved: Math.ceil(rates.create + maxRate(rates) * ttlSeconds),
    spent: 0,
    settledAt: null,
  };
}

/** The cost of what a sandbox has used so far, in micros. */
export function costSoFar(billing: SandboxBilling): number {
  const { rates } = billing;
  return Math.ceil(
    (billing.created ? rates.create : 0) +
      (rates.running * billing.runningMs +
        rates.paused * billing.pausedMs +
        rates.stopped * billing.stoppedMs) /
        1000,
  );
}

/** A sandbox's cost as its view shows it: in currency units, with the stretch being billed now. */
export function costView(billing: SandboxBilling, status: SandboxStatus): SandboxCost {
  const state = billing.settledAt === null ? billedStateOf(status) : null;
  return {
    month: billing.month,
    soFar: fromMicros(billing.settledAt === null ? costSoFar(billing) : billing.spent),
    reserved: fromMicros(billing.reserved),
    accruing:
      state === null || billing.since === null
        ? null
        : { since: billing.since, perSecond: fromMicros(billing.rates[state]) },
    settledAt: billing.settledAt,
  };
}

interface Billed {
  status: SandboxStatus;
  billing: SandboxBilling | null;
  expiresAt: string | null;
}

/** Adds the time since the last move in the current state's rate, up to `now` (and never past expiresAt). */
function accrue(billing: SandboxBilling, from: Billed, now: Date): SandboxBilling {
  const state = billedStateOf(from.status);
  const next = { ...billing, since: now.toISOString() };
  if (state === null || billing.since === null) return next;
  const end = Math.min(now.getTime(), from.expiresAt === null ? now.getTime() : Date.parse(from.expiresAt));
  const elapsed = Math.max(0, end - Date.parse(billing.since));
  const field = `${state}Ms` as const;
  return { ...next, [field]: billing[field] + elapsed };
}

/** What a status change does to the billing (not a reservation: activation brings its own). */
export function billingAfterMove(from: Billed, to: SandboxStatus, now: Date): SandboxBilling | null {
  const billing = from.billing;
  if (billing === null || billing.settledAt !== null) return billing;
  // Back to the queue (a retry): nothing ran; the reservation goes, and the next activation takes a new one.
  if (to === 'queued') return null;
  const accrued = accrue(billing, from, now);
  if (to === 'terminating' || to === 'terminated' || to === 'failed') {
    return {
      ...accrued,
      since: null,
      reserved: 0,
      spent: Math.min(costSoFar(accrued), billing.reserved),
      settledAt: now.toISOString(),
    };
  }
  return to === 'running' ? { ...accrued, created: true } : accrued;
}

/**
 * A TTL change: the reservation becomes what was billed so far plus the new remaining time (until
 * `expiresAt`, or the whole TTL when the sandbox has not started its clock) at the dearest rate.
 */
export function billingAfterTtlChange(
  from: Billed,
  change: { ttlSeconds: number; expiresAt: string | null },
  now: Date,
): SandboxBilling | null {
  const billing = from.billing;
  if (billing === null || billing.settledAt !== null) return billing;
  const accrued = accrue(billing, from, now);
  const remainingMs =
    change.expiresAt === null
      ? change.ttlSeconds * 1000
      : Math.max(0, Date.parse(change.expiresAt) - now.getTime());
  const billedMs = accrued.runningMs + accrued.pausedMs + accrued.stoppedMs;
  const { rates } = accrued;
  return {
    ...accrued,
    reserved: Math.ceil(rates.create + (maxRate(rates) * (billedMs + remainingMs)) / 1000),
  };
}

/** One budget's change: micros reserved and spent, in a month's ledger of an org or a project. */
export interface LedgerChange {
  month: string;
  reserved: number;
  spent: number;
}

/** The ledger changes between two billings of one sandbox; empty when nothing moves. */
export function ledgerChanges(from: SandboxBilling | null, to: SandboxBilling | null): LedgerChange[] {
  const changes = new Map<string, LedgerChange>();
  const add = (billing: SandboxBilling | null, sign: 1 | -1) => {
    if (billing === null) return;
    const change = changes.get(billing.month) ?? { month: billing.month, reserved: 0, spent: 0 };
    change.reserved += sign * billing.reserved;
    change.spent += sign * billing.spent;
    changes.set(billing.month, change);
  };
  add(from, -1);
  add(to, 1);
  return [...changes.values()].filter((change) => change.reserved !== 0 || change.spent !== 0);
}

/** What a change takes of the budget: reservations and spend both count against it. */
export function chargeOf(change: LedgerChange): number {
  return change.reserved + change.spent;
}
