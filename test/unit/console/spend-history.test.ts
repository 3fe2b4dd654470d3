import { describe, expect, it } from 'vitest';
import { spendHistory } from '../../../console/src/spend-history.ts';
import type { SandboxView } from '../../../sdk/client.ts';

const at = (minute: number) => new Date(Date.UTC(2026, 11, 7, 12, minute)).toISOString();
/** The parts of a sandbox's view the history reads. */
const sandbox = (createdAt: string, cost: SandboxView['cost']) => ({ createdAt, cost }) as SandboxView;

describe("the console's spend history", () => {
  it('steps the spend at each settlement, counts live reservations from their creation, and adds live cost now', () => {
    const now = Date.parse(at(30));
    const points = spendHistory(
      [
        sandbox(at(0), { month: '2026-12', soFar: 2, reserved: 0, accruing: null, settledAt: at(10) }),
        sandbox(at(5), {
          month: '2026-12',
          soFar: 1,
          reserved: 40,
          accruing: { since: at(20), perSecond: 0.01 },
          settledAt: null,
        }),
        sandbox(at(1), { month: '2026-12', soFar: 3, reserved: 0, accruing: null, settledAt: at(15) }),
        // Another month's, and one never activated: not in this month's chart.
        sandbox(at(2), { month: '2026-11', soFar: 9, reserved: 0, accruing: null, settledAt: at(3) }),
        sandbox(at(4), null),
      ],
      '2026-12',
      now,
    );
    expect(points).toEqual([
      { at: Date.parse(at(5)) / 1000, spent: 0, reserved: 40 },
      { at: Date.parse(at(10)) / 1000, spent: 2, reserved: 40 },
      { at: Date.parse(at(15)) / 1000, spent: 5, reserved: 40 },
      // Now: the live one's cost so far (1) and its ten minutes at 0.01 a second (6).
      { at: now / 1000, spent: 12, reserved: 40 },
    ]);
  });

  it('is one point, nothing spent, for a month without sandboxes', () => {
    expect(spendHistory([], '2026-12', 1_000)).toEqual([{ at: 1, spent: 0, reserved: 0 }]);
  });
});
