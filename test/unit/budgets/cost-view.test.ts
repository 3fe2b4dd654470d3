import { describe, expect, it } from 'vitest';
import { billingAfterMove, costView, reservationFor } from '../../../lib/budgets/billing.ts';

/** Rates in micros: 2 a create (2 currency units), 1,000 a running second (0.001), 10 a paused second. */
const rates = { create: 2_000_000, running: 1_000, paused: 10, stopped: 0 };
const at = (seconds: number) => new Date(Date.UTC(2026, 11, 7, 12, 0, seconds));

describe("a sandbox's cost as its view shows it", () => {
  it('counts the create once it runs, and says what accrues now and since when', () => {
    const activated = reservationFor(rates, 3600, at(0));
    const running = billingAfterMove(
      { status: 'provisioning', billing: activated, expiresAt: null },
      'running',
      at(5),
    );
    expect(costView(activated, 'provisioning')).toEqual({
      month: '2026-12',
      soFar: 0,
      reserved: 2 + 0.001 * 3600,
      accruing: null,
      settledAt: null,
    });
    expect(costView(running ?? activated, 'running')).toEqual({
      month: '2026-12',
      soFar: 2,
      reserved: 2 + 0.001 * 3600,
      accruing: { since: at(5).toISOString(), perSecond: 0.001 },
      settledAt: null,
    });
  });

  it('adds each stretch at its state’s rate, and once settled shows what was charged and holds nothing', () => {
    let billing = reservationFor(rates, 3600, at(0));
    billing =
      billingAfterMove({ status: 'provisioning', billing, expiresAt: null }, 'running', at(0)) ?? billing;
    billing = billingAfterMove({ status: 'running', billing, expiresAt: null }, 'paused', at(100)) ?? billing;
    expect(costView(billing, 'paused')).toMatchObject({ soFar: 2.1, accruing: { perSecond: 0.00001 } });
    billing =
      billingAfterMove({ status: 'paused', billing, expiresAt: null }, 'terminated', at(200)) ?? billing;
    expect(costView(billing, 'terminated')).toEqual({
      month: '2026-12',
      soFar: 2.101,
      reserved: 0,
      accruing: null,
      settledAt: at(200).toISOString(),
    });
  });
});
