import type { SandboxView } from '../../sdk/client.ts';

/** One point of the month's spend chart: seconds since the epoch, currency units. */
export interface SpendPoint {
  at: number;
  /** What settled sandboxes were charged up to `at`, and (at the last point) what live ones cost so far. */
  spent: number;
  /** What the sandboxes live now held of the budget at `at` (from their creation on). */
  reserved: number;
}

/**
 * The month's spend over time, from the sandboxes' own costs (`cost` on each view): each settlement adds
 * what that sandbox was charged, at its settledAt; each live sandbox's reservation counts from its
 * creation; the last point, now, adds what the live ones have cost so far. A settled sandbox's past
 * reservation is not kept by the API, so the reserved line covers the sandboxes live now only.
 */
export function spendHistory(sandboxes: readonly SandboxView[], month: string, now: number): SpendPoint[] {
  const events: { at: number; spent: number; reserved: number }[] = [];
  let accruing = 0;
  for (const sandbox of sandboxes) {
    const cost = sandbox.cost;
    if (cost === null || cost.month !== month) continue;
    if (cost.settledAt !== null)
      events.push({ at: Date.parse(cost.settledAt), spent: cost.soFar, reserved: 0 });
    else {
      events.push({ at: Date.parse(sandbox.createdAt), spent: 0, reserved: cost.reserved });
      const since = cost.accruing === null ? 0 : Math.max(0, now - Date.parse(cost.accruing.since)) / 1000;
      accruing += cost.soFar + (cost.accruing?.perSecond ?? 0) * since;
    }
  }
  events.sort((a, b) => a.at - b.at);
  const points: SpendPoint[] = [];
  let spent = 0;
  let reserved = 0;
  for (const event of events) {
    spent += event.spent;
    reserved += event.reserved;
    points.push({ at: event.at / 1000, spent, reserved });
  }
  points.push({ at: now / 1000, spent: spent + accruing, reserved });
  return points;
}
