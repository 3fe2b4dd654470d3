import type { ComponentChildren, JSX } from 'preact';
import type { SandboxView } from '../../sdk/client.ts';

/** What an error says to a person: the API's code and message, or that the API could not be reached. */
export function errorText(error: unknown): string {
  if (error === undefined || error === null) return '';
  const known = error as { code?: unknown; message?: unknown; status?: unknown };
  if (typeof known.code === 'string' && typeof known.message === 'string')
    return known.message.startsWith(known.code) ? known.message : `${known.code}: ${known.message}`;
  return error instanceof Error ? error.message : String(error);
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

/** Control characters shown as visible symbols: output is text here, never interpreted (ANSI included). */
export function visibleText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly what is made visible
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
    c === '\u001b' ? '␛' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

export function Labels({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels);
  if (entries.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="labels">
      {entries.map(([key, value]) => (
        <li key={key}>
          {key}={value}
        </li>
      ))}
    </ul>
  );
}

export function Status({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

/** How long ago, in words a glance reads (the exact time is its title). */
export function Age({ at, now = Date.now() }: { at: string; now?: number }) {
  const seconds = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  const text =
    seconds < 60
      ? `${seconds}s`
      : seconds < 3600
        ? `${Math.floor(seconds / 60)}m`
        : seconds < 86400
          ? `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`
          : `${Math.floor(seconds / 86400)}d`;
  return (
    <time dateTime={at} title={at}>
      {text}
    </time>
  );
}

const amounts = new Intl.NumberFormat('en', { minimumFractionDigits: 2, maximumFractionDigits: 4 });

/** An amount in the pools' currency (the operator chooses it; budgets are in the same one). */
export function money(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : `$${amounts.format(value)}`;
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  const id = `section-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** A labelled text input bound to a value (the label wraps it, so a click on the words focuses it). */
export function Field({
  label,
  value,
  onValue,
  ...input
}: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  name?: string;
  id?: string;
  type?: 'text' | 'number' | 'search' | 'url';
  placeholder?: string;
  required?: boolean;
  min?: number;
  step?: string;
  class?: string;
}) {
  return (
    <label>
      {label}{' '}
      {/* Preact types each input type's attributes apart; a Field's are common to the types it takes. */}
      <input
        {...(input as JSX.IntrinsicElements['input'])}
        value={value}
        onInput={(event) => onValue((event.target as HTMLInputElement).value)}
      />
    </label>
  );
}

/** A table with its header row; the caption is read by screen readers, and shown unless `hidden`. */
export function Table({
  caption,
  columns,
  hiddenCaption = true,
  children,
}: {
  caption: string;
  columns: string[];
  hiddenCaption?: boolean;
  children: ComponentChildren;
}) {
  return (
    <table>
      <caption class={hiddenCaption ? 'visually-hidden' : undefined}>{caption}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column === '' ? <span class="visually-hidden">Actions</span> : column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

/** A labelled choice among options (value and text alike, unless `options` pairs them). */
export function Choice<T extends string>({
  label,
  value,
  onValue,
  options,
}: {
  label: string;
  value: T;
  onValue: (value: T) => void;
  options: readonly (T | readonly [T, string])[];
}) {
  return (
    <label>
      {label}{' '}
      <select value={value} onChange={(event) => onValue((event.target as HTMLSelectElement).value as T)}>
        {options.map((option) => {
          const [optionValue, text] = typeof option === 'string' ? [option, option] : option;
          return (
            <option key={optionValue} value={optionValue}>
              {text}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** A form whose submit runs `work` as the action (its busy state disables the button). */
export function ActionForm({
  action,
  work,
  submit,
  children,
}: {
  action: { busy: boolean; run: (work: () => Promise<unknown>) => Promise<void> };
  work: () => Promise<unknown>;
  submit: string;
  children: ComponentChildren;
}) {
  return (
    <form
      class="inline"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(work);
      }}
    >
      {children}
      <button type="submit" disabled={action.busy}>
        {submit}
      </button>
    </form>
  );
}

/** What a sandbox has cost up to `now`: its cost at its last change plus the stretch being billed. */
export function costNow(cost: SandboxView['cost'], now = Date.now()): number | null {
  if (cost === null) return null;
  const accruing =
    cost.accruing === null
      ? 0
      : (cost.accruing.perSecond * Math.max(0, now - Date.parse(cost.accruing.since))) / 1000;
  return cost.soFar + accruing;
}
