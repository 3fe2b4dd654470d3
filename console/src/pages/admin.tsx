import { useState } from 'preact/hooks';
import type { CreatedKey } from '../../../sdk/client.ts';
import type { Signed } from '../app.tsx';
import { ActionForm, Choice, ErrorNote, Field, money, Section, Table } from '../components.tsx';
import { useAction, useLoad } from '../hooks.ts';

/** The bootstrap admin's pages: the organizations, and one's keys, quota, budget and webhooks. */
export function AdminPage({ signed, orgId }: { signed: Signed; orgId: string | undefined }) {
  return orgId === undefined ? <Orgs signed={signed} /> : <Org signed={signed} orgId={orgId} />;
}

function Orgs({ signed }: { signed: Signed }) {
  const { client } = signed;
  const orgs = useLoad(() => client.admin.listOrgs({ limit: 100 }), []);
  const [name, setName] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Organizations</h1>
      <ActionForm
        action={create}
        submit="Create"
        work={async () => {
          await client.admin.createOrg({ name });
          setName('');
          orgs.reload();
        }}
      >
        <label for="org-name">New organization</label>
        <input
          id="org-name"
          value={name}
          required
          onInput={(event) => setName((event.target as HTMLInputElement).value)}
        />
      </ActionForm>
      <ErrorNote error={create.error ?? orgs.error} />
      <Table caption="Organizations" columns={['Organization', 'Name', 'Budget', 'Max sandboxes']}>
        {(orgs.value?.items ?? []).map((org) => (
          <tr key={org.id} data-org={org.id}>
            <td>
              <a href={`#/admin/${encodeURIComponent(org.id)}`}>{org.id}</a>
            </td>
            <td>{org.name}</td>
            <td>{org.budget === null ? 'none' : money(org.budget)}</td>
            <td>{org.quota.maxSandboxes}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

function Org({ signed, orgId }: { signed: Signed; orgId: string }) {
  const { client } = signed;
  const org = useLoad(() => client.admin.getOrg(orgId), [orgId]);
  const keys = useLoad(() => client.admin.listKeys(orgId, { limit: 100 }), [orgId]);
  const webhooks = useLoad(() => client.admin.listWebhooks(orgId), [orgId]);
  const action = useAction();
  const [keyName, setKeyName] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [budget, setBudget] = useState('');
  const [maxSandboxes, setMaxSandboxes] = useState('');
  const [hookUrl, setHookUrl] = useState('');
  const [shownDeliveries, setShownDeliveries] = useState<string | null>(null);
  const view = org.value;
  return (
    <>
      {signed.identity.kind === 'operator' && (
        <p>
          <a href="#/admin">← Organizations</a>
        </p>
      )}
      <h1>Organization {view?.name ?? orgId}</h1>
      <ErrorNote error={org.error} />
      <ErrorNote error={action.error} />
      <Section title="Keys">
        <ActionForm
          action={action}
          submit="Create a key"
          work={async () => {
            setCreated(await client.admin.createKey(orgId, { name: keyName, role }));
            keys.reload();
          }}
        >
          <Field label="Name" required value={keyName} onValue={setKeyName} />
          <Choice label="Role" value={role} onValue={setRole} options={['member', 'admin'] as const} />
        </ActionForm>
        {created !== null && (
          <p role="status">
            Key {created.name} (shown once): <code data-created-key="">{created.key}</code>
          </p>
        )}
        <Table caption="Keys" columns={['Key', 'Name', 'Role', 'Project', 'State']}>
          {(keys.value?.items ?? []).map((key) => (
            <tr key={key.id}>
              <td>{key.id}</td>
              <td>{key.name}</td>
              <td>{key.role}</td>
              <td>{key.projectId ?? 'every project'}</td>
              <td>
                {key.revokedAt !== null ? (
                  `revoked ${key.revokedAt}`
                ) : (
                  <button
                    type="button"
                    onClick={() =>
                      void action.run(async () => {
                        await client.admin.revokeKey(key.id);
                        keys.reload();
                      })
                    }
                  >
                    Revoke <span class="visually-hidden">{key.name}</span>
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      </Section>
      {view !== undefined && (
        <Section title="Quota and budget">
          <p>
            Monthly budget: {view.budget === null ? 'none' : money(view.budget)}; at most{' '}
            {view.quota.maxSandboxes} sandboxes, {view.quota.maxCPU} CPU.
          </p>
          <ActionForm
            action={action}
            submit="Set the budget"
            work={async () => {
              await client.admin.setBudget(orgId, budget.trim() === '' ? null : Number(budget));
              org.reload();
            }}
          >
            <Field
              label="Monthly budget (empty: none)"
              type="number"
              min={0}
              step="any"
              value={budget}
              onValue={setBudget}
            />
          </ActionForm>
          <ActionForm
            action={action}
            submit="Set the quota"
            work={async () => {
              await client.admin.setQuota(orgId, { maxSandboxes: Number(maxSandboxes) });
              org.reload();
            }}
          >
            <Field
              label="Max sandboxes"
              type="number"
              min={0}
              required
              value={maxSandboxes}
              onValue={setMaxSandboxes}
            />
          </ActionForm>
        </Section>
      )}
      <Section title="Webhooks">
        <ErrorNote error={webhooks.error} />
        <ActionForm
          action={action}
          submit="Add a webhook"
          work={async () => {
            await client.admin.createWebhook(orgId, { url: hookUrl });
            setHookUrl('');
            webhooks.reload();
          }}
        >
          <Field label="URL" type="url" required value={hookUrl} onValue={setHookUrl} />
        </ActionForm>
        <ul>
          {(webhooks.value?.items ?? []).map((hook) => (
            <li key={hook.id} data-webhook={hook.id}>
              {hook.url} ({hook.events?.join(', ') ?? 'every event'}){' '}
              <button
                type="button"
                aria-expanded={shownDeliveries === hook.id}
                onClick={() => setShownDeliveries(shownDeliveries === hook.id ? null : hook.id)}
              >
                Deliveries <span class="visually-hidden">of {hook.url}</span>
              </button>{' '}
              <button
                type="button"
                onClick={() =>
                  void action.run(async () => {
                    await client.admin.deleteWebhook(orgId, hook.id);
                    webhooks.reload();
                  })
                }
              >
                Delete <span class="visually-hidden">{hook.url}</span>
              </button>
              {shownDeliveries === hook.id && (
                <Deliveries signed={signed} orgId={orgId} webhookId={hook.id} />
              )}
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}

/** An endpoint's deliveries (the API keeps a week of them), newest first, polled while shown. */
function Deliveries({ signed, orgId, webhookId }: { signed: Signed; orgId: string; webhookId: string }) {
  const deliveries = useLoad(
    () => signed.client.admin.listWebhookDeliveries(orgId, webhookId, { limit: 50 }),
    [orgId, webhookId],
    5000,
  );
  return (
    <>
      <ErrorNote error={deliveries.error} />
      <Table
        caption="Deliveries, newest first"
        columns={['Event', 'Sandbox', 'At', 'Attempts', 'Last answer', 'Delivered']}
      >
        {(deliveries.value?.items ?? []).map((delivery) => (
          <tr key={delivery.id} data-delivery={delivery.id}>
            <td>{delivery.type}</td>
            <td>{delivery.sandboxId}</td>
            <td>
              <time dateTime={delivery.createdAt}>{delivery.createdAt}</time>
            </td>
            <td>{delivery.attempts}</td>
            <td>{delivery.lastStatus ?? delivery.lastError ?? ''}</td>
            <td>{delivery.deliveredAt ?? 'not yet'}</td>
          </tr>
        ))}
      </Table>
      {deliveries.value?.items.length === 0 && <p class="muted">No deliveries in the last week.</p>}
    </>
  );
}
