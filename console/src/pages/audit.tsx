import { useState } from 'preact/hooks';
import type { Signed } from '../app.tsx';
import { readAudit } from '../audit-events.ts';
import { ErrorNote, Field, Section, Table } from '../components.tsx';
import { useAction, useLoad } from '../hooks.ts';

interface Verification {
  ok: boolean;
  checked: number;
  orgId?: string;
  firstBroken?: { seq: number; reason: string };
}

/** The org's audit chain (an operator's: one org's, or every org's verification), searchable. */
export function AuditPage({ signed }: { signed: Signed }) {
  const { client, identity } = signed;
  const operator = identity.kind === 'operator';
  // The events are an organization's own keys' to read; the verification an admin key's.
  const readsEvents = identity.kind === 'org';
  const [search, setSearch] = useState('');
  const [orgId, setOrgId] = useState('');
  const [verification, setVerification] = useState<Verification | null>(null);
  const verify = useAction();
  const events = useLoad(async () => (readsEvents ? readAudit(client) : []), [readsEvents]);
  const needle = search.trim().toLowerCase();
  const shown = (events.value ?? []).filter(
    (event) =>
      needle === '' ||
      [event.action, event.actor, event.target, JSON.stringify(event.details)].some((field) =>
        field.toLowerCase().includes(needle),
      ),
  );
  const canVerify = identity.kind !== 'org';
  return (
    <>
      <h1>Audit</h1>
      <Section title="Verification">
        {canVerify ? (
          <form
            class="inline"
            onSubmit={(event) => {
              event.preventDefault();
              void verify.run(async () =>
                setVerification(
                  await client.admin.verifyAudit(operator && orgId.trim() !== '' ? orgId.trim() : undefined),
                ),
              );
            }}
          >
            {operator && (
              <Field
                label="Organization (empty: every one)"
                placeholder="org_…"
                value={orgId}
                onValue={setOrgId}
              />
            )}
            <button type="submit" disabled={verify.busy}>
              Verify the chain
            </button>
          </form>
        ) : (
          <p class="muted">
            Verifying the chain needs an admin key: this organization's admin-role key, or the operator's.
          </p>
        )}
        <ErrorNote error={verify.error} />
        {verification !== null && (
          <p role="status" class={verification.ok ? 'ok' : 'error'}>
            {verification.ok
              ? `The chain is intact: ${verification.checked} events checked.`
              : `The chain is broken at event ${verification.firstBroken?.seq}: ${verification.firstBroken?.reason} (${verification.checked} checked).`}
          </p>
        )}
      </Section>
      {readsEvents && (
        <Section title="Events">
          <Field label="Search" type="search" value={search} onValue={setSearch} />
          <ErrorNote error={events.error} />
          <Table
            caption="Audit events, oldest first"
            columns={['#', 'At', 'Action', 'Actor', 'Target', 'Details']}
          >
            {shown.map((event) => (
              <tr key={event.seq}>
                <td>{event.seq}</td>
                <td>
                  <time dateTime={event.at}>{event.at}</time>
                </td>
                <td>{event.action}</td>
                <td>{event.actor}</td>
                <td>{event.target}</td>
                <td>
                  <code>{JSON.stringify(event.details)}</code>
                </td>
              </tr>
            ))}
          </Table>
        </Section>
      )}
    </>
  );
}
