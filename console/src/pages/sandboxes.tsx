import { useState } from 'preact/hooks';
import type { SandboxView } from '../../../sdk/client.ts';
import type { Signed } from '../app.tsx';
import {
  Age,
  Choice,
  costNow,
  ErrorNote,
  Field,
  Labels,
  money,
  Section,
  Status,
  Table,
} from '../components.tsx';
import { useAction, useLoad } from '../hooks.ts';

const statuses = [
  'queued',
  'provisioning',
  'running',
  'stopping',
  'stopped',
  'starting',
  'pausing',
  'paused',
  'resuming',
  'terminating',
  'terminated',
  'failed',
] as const;
type SandboxStatus = (typeof statuses)[number];

/** Names separated by spaces or commas. */
function words(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

/** `key=value` pairs, one per line or comma: the labels of a create. */
function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(/[\n,]/)) {
    const at = pair.indexOf('=');
    if (pair.trim() === '') continue;
    if (at <= 0) throw new Error(`a label is key=value, not "${pair.trim()}"`);
    labels[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return labels;
}

export function SandboxesPage({ signed }: { signed: Signed }) {
  const { client } = signed;
  const [status, setStatus] = useState<SandboxStatus | ''>('');
  const [label, setLabel] = useState('');
  const list = useLoad(
    () =>
      client.listSandboxes({
        limit: 100,
        ...(status !== '' && { status }),
        ...(label.trim() !== '' && { label: label.trim() }),
      }),
    [status, label],
    3000,
  );
  return (
    <>
      <h1>Sandboxes</h1>
      <CreateSandbox signed={signed} onCreated={list.reload} />
      <Section title="Live list">
        <form class="filters" onSubmit={(event) => event.preventDefault()}>
          <Choice
            label="Status"
            value={status}
            onValue={setStatus}
            options={[['', 'any'], ...statuses] as const}
          />
          <Field label="Labels" placeholder="team=a,tier=gold" value={label} onValue={setLabel} />
        </form>
        <ErrorNote error={list.error} />
        <SandboxTable sandboxes={list.value?.items ?? []} />
        {list.value !== undefined && list.value.items.length === 0 && <p class="muted">No sandboxes.</p>}
      </Section>
    </>
  );
}

function SandboxTable({ sandboxes }: { sandboxes: SandboxView[] }) {
  const now = Date.now();
  if (sandboxes.length === 0) return null;
  return (
    <Table
      caption="Sandboxes, newest first"
      columns={['Sandbox', 'Status', 'Pool', 'Template', 'Labels', 'Age', 'Cost so far']}
    >
      {sandboxes.map((sandbox) => (
        <tr key={sandbox.id} data-sandbox={sandbox.id}>
          <td>
            <a href={`#/sandboxes/${encodeURIComponent(sandbox.id)}`}>{sandbox.id}</a>
          </td>
          <td>
            <Status status={sandbox.status} />
          </td>
          <td>{sandbox.pool ?? <span class="muted">none yet</span>}</td>
          <td>{sandbox.template ?? <span class="muted">default</span>}</td>
          <td>
            <Labels labels={sandbox.labels} />
          </td>
          <td>
            <Age at={sandbox.createdAt} now={now} />
          </td>
          <td>
            {sandbox.cost === null ? <span class="muted">none yet</span> : money(costNow(sandbox.cost, now))}
          </td>
        </tr>
      ))}
    </Table>
  );
}

function CreateSandbox({ signed, onCreated }: { signed: Signed; onCreated: () => void }) {
  const { client } = signed;
  const templates = useLoad(() => client.templates(), []);
  const [template, setTemplate] = useState('');
  const [labels, setLabels] = useState('');
  const [capabilities, setCapabilities] = useState('');
  const [pools, setPools] = useState('');
  const [created, setCreated] = useState<SandboxView | null>(null);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const wanted = words(capabilities);
      const allowedPools = words(pools);
      const sandbox = await client.createSandbox({
        ...(template !== '' && { template }),
        labels: parseLabels(labels),
        ...(wanted.length > 0 && { capabilities: wanted }),
        ...(allowedPools.length > 0 && { placement: { allowedPools } }),
      });
      setCreated(sandbox);
      onCreated();
    });
  };
  return (
    <Section title="Create a sandbox">
      <form class="create" onSubmit={submit}>
        <Choice
          label="Template"
          value={template}
          onValue={setTemplate}
          options={[['', 'the default'], ...(templates.value?.items ?? []).map((t) => t.name)] as const}
        />
        <Field
          label="Labels"
          name="labels"
          placeholder="team=a,tier=gold"
          value={labels}
          onValue={setLabels}
        />
        <Field
          label="Capabilities"
          name="capabilities"
          placeholder="exec files"
          value={capabilities}
          onValue={setCapabilities}
        />
        <Field label="Pools" name="pools" placeholder="any" value={pools} onValue={setPools} />
        <button type="submit" disabled={action.busy}>
          Create
        </button>
      </form>
      <ErrorNote error={action.error} />
      {created !== null && (
        <p role="status">
          Created <a href={`#/sandboxes/${encodeURIComponent(created.id)}`}>{created.id}</a> ({created.status}
          ).
        </p>
      )}
    </Section>
  );
}
