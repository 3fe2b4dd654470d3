import { useState } from 'preact/hooks';
import type { SandboxView } from '../../../sdk/client.ts';
import type { Signed } from '../app.tsx';
import { readAudit } from '../audit-events.ts';
import { Age, costNow, ErrorNote, Field, Labels, money, Section, Status, Table } from '../components.tsx';
import { useAction, useLoad } from '../hooks.ts';
import { CommandRunner, FileBrowser } from './sandbox-tools.tsx';
import { Terminal } from './terminal.tsx';

/** One sandbox: what it is, where it was placed and why, its history, and what can be done with it. */
export function SandboxPage({ signed, id }: { signed: Signed; id: string }) {
  const { client } = signed;
  const sandbox = useLoad(() => client.getSandbox(id), [id], 2000);
  const view = sandbox.value;
  return (
    <>
      <p>
        <a href="#/sandboxes">← Sandboxes</a>
      </p>
      <h1>Sandbox {id}</h1>
      <ErrorNote error={sandbox.error} />
      {view !== undefined && (
        <>
          <Details sandbox={view} />
          <Actions signed={signed} sandbox={view} onDone={sandbox.reload} />
          <Placement sandbox={view} />
          <Timeline signed={signed} id={id} status={view.status} />
          {view.status === 'running' && (
            <>
              <CommandRunner signed={signed} id={id} />
              <Terminal signed={signed} id={id} />
              <FileBrowser signed={signed} id={id} />
            </>
          )}
        </>
      )}
    </>
  );
}

function Details({ sandbox }: { sandbox: SandboxView }) {
  return (
    <Section title="Details">
      <dl class="details">
        <dt>Status</dt>
        <dd>
          <Status status={sandbox.status} /> {sandbox.statusMessage ?? ''}
        </dd>
        <dt>Pool</dt>
        <dd>{sandbox.pool ?? 'none yet'}</dd>
        <dt>Template</dt>
        <dd>{sandbox.template ?? 'default'}</dd>
        <dt>Resources</dt>
        <dd>
          {sandbox.resources.cpu} CPU, {sandbox.resources.memoryMiB} MiB, {sandbox.resources.diskGiB} GiB
        </dd>
        <dt>Labels</dt>
        <dd>
          <Labels labels={sandbox.labels} />
        </dd>
        <dt>Created</dt>
        <dd>
          <Age at={sandbox.createdAt} /> ago
        </dd>
        <dt>Expires</dt>
        <dd>{sandbox.expiresAt ?? 'not set'}</dd>
        <dt>Cost so far</dt>
        <dd>
          {sandbox.cost === null
            ? 'nothing yet (it is charged from its activation)'
            : `${money(costNow(sandbox.cost))}; ${money(sandbox.cost.reserved)} held of the ${sandbox.cost.month} budget`}
        </dd>
        <dt>Egress</dt>
        <dd>{sandbox.network === null ? "the pool's own network" : JSON.stringify(sandbox.network)}</dd>
      </dl>
    </Section>
  );
}

function Placement({ sandbox }: { sandbox: SandboxView }) {
  const { placement } = sandbox;
  return (
    <Section title="Placement">
      <p>
        Chosen pool: <strong>{placement.pool ?? 'none'}</strong>
      </p>
      {placement.rejected.length === 0 ? (
        <p class="muted">No pool was rejected.</p>
      ) : (
        <Table caption="Rejected pools" columns={['Pool', 'Reason']} hiddenCaption={false}>
          {placement.rejected.map((rejected) => (
            <tr key={rejected.pool} data-rejected={rejected.pool}>
              <td>{rejected.pool}</td>
              <td>{rejected.reason}</td>
            </tr>
          ))}
        </Table>
      )}
    </Section>
  );
}

/** Its lifecycle from the org's audit chain: the events whose target is this sandbox. */
function Timeline({ signed, id, status }: { signed: Signed; id: string; status: string }) {
  const { client } = signed;
  const events = useLoad(() => readAudit(client, (event) => event.target === id), [id, status]);
  return (
    <Section title="Timeline">
      <ErrorNote error={events.error} />
      <ol class="timeline">
        {(events.value ?? []).map((event) => (
          <li key={event.seq}>
            <time dateTime={event.at}>{event.at}</time> <strong>{event.action}</strong> by {event.actor}
          </li>
        ))}
      </ol>
      {events.value?.length === 0 && (
        <p class="muted">No audit events name this sandbox (a key restricted to a project sees none).</p>
      )}
    </Section>
  );
}

function Actions({ signed, sandbox, onDone }: { signed: Signed; sandbox: SandboxView; onDone: () => void }) {
  const { client } = signed;
  const action = useAction();
  const [ttl, setTtl] = useState('3600');
  const [note, setNote] = useState('');
  const act = (label: string, work: () => Promise<unknown>) =>
    action.run(async () => {
      setNote('');
      await work();
      setNote(`${label}: requested`);
      onDone();
    });
  const { id, status } = sandbox;
  // Each lifecycle call, and the status it starts from.
  const moves = [
    ['Stop', 'running', (sandboxId: string) => client.stop(sandboxId)],
    ['Start', 'stopped', (sandboxId: string) => client.start(sandboxId)],
    ['Pause', 'running', (sandboxId: string) => client.pause(sandboxId)],
    ['Resume', 'paused', (sandboxId: string) => client.resume(sandboxId)],
  ] as const;
  const gone = status === 'terminating' || status === 'terminated' || status === 'failed';
  return (
    <Section title="Actions">
      <div class="actions">
        {moves.map(([label, from, call]) => (
          <button
            key={label}
            type="button"
            disabled={action.busy || status !== from}
            onClick={() => act(label, () => call(id))}
          >
            {label}
          </button>
        ))}
        <button
          type="button"
          disabled={action.busy || gone}
          onClick={() => act('Snapshot', () => client.createSnapshot(id))}
        >
          Snapshot
        </button>
        <button
          type="button"
          disabled={action.busy || gone}
          onClick={() =>
            act('Fork', async () => {
              const fork = await client.fork(id);
              setNote(`Forked as ${fork.id}`);
            })
          }
        >
          Fork
        </button>
        <button
          type="button"
          class="danger"
          disabled={action.busy || gone}
          onClick={() => {
            if (window.confirm(`Delete sandbox ${id}?`)) void act('Delete', () => client.deleteSandbox(id));
          }}
        >
          Delete
        </button>
      </div>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault();
          void act('Extend TTL', () => client.updateSandbox(id, { ttlSeconds: Number(ttl) }));
        }}
      >
        <Field label="TTL from now (seconds)" type="number" min={60} value={ttl} onValue={setTtl} />
        <button type="submit" disabled={action.busy || gone}>
          Extend TTL
        </button>
      </form>
      <ErrorNote error={action.error} />
      {note !== '' && <p role="status">{note}</p>}
    </Section>
  );
}
