import type { Signed } from '../app.tsx';
import { ErrorNote, money, Section, Table } from '../components.tsx';
import { useLoad } from '../hooks.ts';

/** The trust report (an organization's view) or the pools and their health (the operator's). */
export function TrustPage({ signed }: { signed: Signed }) {
  return signed.identity.kind === 'operator' ? <Pools signed={signed} /> : <Trust signed={signed} />;
}

function Trust({ signed }: { signed: Signed }) {
  const report = useLoad(() => signed.client.trust(), [], 10_000);
  const view = report.value;
  return (
    <>
      <h1>Trust and pools</h1>
      <ErrorNote error={report.error} />
      {view !== undefined && (
        <>
          <Section title="Pools">
            <Table
              caption="Each pool's trust report"
              columns={[
                'Pool',
                'Adapter',
                'Trust',
                'Region',
                'Isolation',
                'Egress per sandbox',
                'Prices',
                'Health',
                'Limitations',
              ]}
            >
              {view.pools.map((pool) => (
                <tr key={pool.name} data-pool={pool.name}>
                  <th scope="row">{pool.name}</th>
                  <td>{pool.adapter}</td>
                  <td>{pool.trust}</td>
                  <td>{pool.region ?? '—'}</td>
                  <td>
                    {pool.isolation} ({pool.isolationVerified ? 'checked' : 'declared, not checked'})
                  </td>
                  <td>{pool.egress.length === 0 ? 'none' : pool.egress.join(', ')}</td>
                  <td>
                    {`${money(pool.prices.perCreate)} a create; running ${money(pool.prices.running.perVcpuSecond * 3600)}/vCPU h, ${money(pool.prices.running.perGiBSecond * 3600)}/GiB h`}
                  </td>
                  <td>{pool.healthy ? 'healthy' : 'unhealthy'}</td>
                  <td>{pool.limitations.join('; ') || '—'}</td>
                </tr>
              ))}
            </Table>
          </Section>
          <Section title="Policy and network">
            <dl class="details">
              <dt>External pools</dt>
              <dd>
                {view.policy.allowExternal
                  ? `allowed: ${view.externalPoolsInUse.join(', ') || 'none in use'}`
                  : 'not allowed'}
              </dd>
              <dt>Default egress</dt>
              <dd>
                {view.network.default === null
                  ? "none (each pool's own network)"
                  : JSON.stringify(view.network.default)}
              </dd>
              <dt>Never reachable</dt>
              <dd>{view.network.denyAlways.join(', ') || '—'}</dd>
              <dt>Generated</dt>
              <dd>{view.generatedAt}</dd>
            </dl>
          </Section>
        </>
      )}
    </>
  );
}

function Pools({ signed }: { signed: Signed }) {
  const pools = useLoad(() => signed.client.admin.listPools(), [], 10_000);
  return (
    <>
      <h1>Pools</h1>
      <ErrorNote error={pools.error} />
      <Table
        caption="The installation's pools"
        columns={['Pool', 'Adapter', 'Trust', 'Health', 'Active / max', 'Refreshed']}
      >
        {(pools.value?.items ?? []).map((pool) => (
          <tr key={pool.name} data-pool={pool.name}>
            <th scope="row">{pool.name}</th>
            <td>{pool.adapter}</td>
            <td>{pool.trust}</td>
            <td>
              {pool.health.healthy ? 'healthy' : `unhealthy: ${pool.health.reason ?? 'no reason given'}`}
            </td>
            <td>
              {pool.active} / {pool.maxConcurrency}
            </td>
            <td>{pool.refreshedAt ?? 'never'}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}
