import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { BudgetView, SandboxView } from '../../../sdk/client.ts';
import type { Signed } from '../app.tsx';
import { ErrorNote, money, Section, Table } from '../components.tsx';
import { useLoad } from '../hooks.ts';
import { type SpendPoint, spendHistory } from '../spend-history.ts';

/**
 * The org's quota use and budget, and the month's spend over time against the budget, from the
 * sandboxes' own costs (spend-history.ts).
 */
export function UsagePage({ signed }: { signed: Signed }) {
  const { client } = signed;
  const usage = useLoad(() => client.usage(), [], 5000);
  const sandboxes = useLoad(() => everySandbox(client), [], 5000);
  const view = usage.value;
  return (
    <>
      <h1>Usage and budgets</h1>
      <ErrorNote error={usage.error} />
      {view !== undefined && (
        <>
          <Section title="Budget">
            <Budget name={`Organization, ${view.budget.month}`} budget={view.budget} />
            {view.projectBudget !== undefined && (
              <Budget name="This key's project" budget={view.projectBudget} />
            )}
            <SpendChart
              points={spendHistory(sandboxes.value ?? [], view.budget.month, Date.now())}
              monthly={view.budget.monthly}
            />
          </Section>
          <Section title="Quota">
            <Table caption="Quota use" columns={['Limit', 'In use', 'Left', 'Use']}>
              {(['sandboxes', 'cpu', 'memoryMiB', 'diskGiB', 'snapshots'] as const).map((name) => {
                const used = view.usage[name];
                const left = view.available[name];
                const total = used + left;
                return (
                  <tr key={name}>
                    <th scope="row">{name}</th>
                    <td>{used}</td>
                    <td>{left}</td>
                    <td>
                      <meter min={0} max={total || 1} value={used} aria-label={`${name} used`} />
                    </td>
                  </tr>
                );
              })}
            </Table>
          </Section>
        </>
      )}
      <Section title="By pool and project">
        <ErrorNote error={sandboxes.error} />
        <Breakdown items={sandboxes.value ?? []} />
      </Section>
    </>
  );
}

function Budget({ name, budget }: { name: string; budget: BudgetView }) {
  return (
    <dl class="details">
      <dt>{name}</dt>
      <dd>
        {money(budget.spent)} spent, {money(budget.reserved)} reserved,{' '}
        {budget.monthly === null ? 'no budget set' : `${money(budget.left)} left of ${money(budget.monthly)}`}
      </dd>
    </dl>
  );
}

/** Live sandboxes and their CPU by pool and by project. */
function Breakdown({
  items,
}: {
  items: { pool: string | null; projectId: string | null; status: string; resources: { cpu: number } }[];
}) {
  const live = items.filter((s) => s.status !== 'terminated' && s.status !== 'failed');
  const count = (key: (s: (typeof live)[number]) => string) => {
    const totals = new Map<string, { sandboxes: number; cpu: number }>();
    for (const sandbox of live) {
      const total = totals.get(key(sandbox)) ?? { sandboxes: 0, cpu: 0 };
      total.sandboxes++;
      total.cpu += sandbox.resources.cpu;
      totals.set(key(sandbox), total);
    }
    return [...totals.entries()];
  };
  const rows = [
    ...count((s) => `pool ${s.pool ?? '(not placed yet)'}`),
    ...count((s) => `project ${s.projectId ?? '(none)'}`),
  ];
  if (rows.length === 0) return <p class="muted">No live sandboxes.</p>;
  return (
    <Table caption="Live sandboxes by pool and project" columns={['Where', 'Sandboxes', 'CPU']}>
      {rows.map(([name, total]) => (
        <tr key={name}>
          <th scope="row">{name}</th>
          <td>{total.sandboxes}</td>
          <td>{total.cpu}</td>
        </tr>
      ))}
    </Table>
  );
}

/** The org's sandboxes, up to ten pages of a hundred (the chart and the breakdown read them). */
async function everySandbox(client: Signed['client']): Promise<SandboxView[]> {
  const found: SandboxView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const answer = await client.listSandboxes({ limit: 100, ...(cursor !== undefined && { cursor }) });
    found.push(...answer.items);
    if (answer.nextCursor === null) break;
    cursor = answer.nextCursor;
  }
  return found;
}

function SpendChart({ points, monthly }: { points: SpendPoint[]; monthly: number | null }) {
  const host = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  useEffect(() => {
    if (host.current === null) return;
    chart.current = new uPlot(
      {
        title: 'This month: spent, and spent plus held, against the budget',
        width: Math.min(720, host.current.clientWidth || 720),
        height: 240,
        series: [
          {},
          { label: 'spent ($)', stroke: '#1f5fa8' },
          { label: 'spent + held ($)', stroke: '#b35c00' },
          { label: 'budget ($)', stroke: '#6b6b6b', dash: [6, 4] },
        ],
        axes: [{}, { label: '$' }],
        // From zero: a spend is read against the whole budget, not against its own range.
        scales: { y: { range: (_chart, _min, max) => [0, Math.max(max, 0.01) * 1.1] } },
      },
      [[], [], [], []],
      host.current,
    );
    return () => chart.current?.destroy();
  }, []);
  useEffect(() => {
    chart.current?.setData([
      points.map((p) => p.at),
      points.map((p) => p.spent),
      points.map((p) => p.spent + p.reserved),
      points.map(() => monthly),
    ]);
  }, [points, monthly]);
  return (
    <div
      class="chart"
      ref={host}
      role="img"
      aria-label={`Chart of this month's spend and reservations against the budget: ${points.length} points, spent now ${money(points.at(-1)?.spent)}`}
    />
  );
}
