import { DifferentlyClient } from '../sdk/index.ts';
import type { CliOptions } from './options.ts';

/** Where a command reads and writes: the process's streams and environment, or a test's. */
export interface CliIo {
  stdout: { write(chunk: string | Uint8Array): unknown };
  stderr: { write(chunk: string | Uint8Array): unknown; isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** The process's own terminal (or pipes), for `sandboxes shell`; tests in process leave it out. */
  terminal?: {
    stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };
    stdout: { write(chunk: string | Uint8Array): unknown; isTTY?: boolean; columns?: number; rows?: number };
  };
}

/** A mistake in how the CLI was called: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What one command runs with: its arguments, the parsed options, and the helpers every command shares. */
export class CommandContext {
  readonly io: CliIo;
  readonly values: CliOptions;
  /** Positionals after the group and its action. */
  readonly rest: string[];
  /** The words after `--` (exec's command). */
  readonly command: string[];
  readonly usage: string;

  constructor(io: CliIo, values: CliOptions, rest: string[], command: string[], usage: string) {
    this.io = io;
    this.values = values;
    this.rest = rest;
    this.command = command;
    this.usage = usage;
  }

  #client: DifferentlyClient | undefined;

  /** Where and as whom: --endpoint and --key (or DIFFERENTLY_ENDPOINT and DIFFERENTLY_API_KEY). */
  get target(): { endpoint: string; key: string } {
    // An empty variable is as good as none.
    const endpoint = this.values.endpoint || this.io.env.DIFFERENTLY_ENDPOINT || undefined;
    const key = this.values.key || this.io.env.DIFFERENTLY_API_KEY || undefined;
    if (endpoint === undefined || key === undefined) {
      throw new UsageError('set --endpoint and --key (or DIFFERENTLY_ENDPOINT and DIFFERENTLY_API_KEY)');
    }
    if (!URL.canParse(endpoint)) throw new UsageError(`the endpoint is not a URL: ${endpoint}`);
    return { endpoint, key };
  }

  /** The API client, for the target. */
  get client(): DifferentlyClient {
    if (this.#client !== undefined) return this.#client;
    const { endpoint, key } = this.target;
    this.#client = new DifferentlyClient({ endpoint, apiKey: key });
    return this.#client;
  }

  /** The value, or a usage error naming it. */
  need(value: string | undefined, name: string): string {
    if (value === undefined) throw new UsageError(`missing <${name}>\n${this.usage}`);
    return value;
  }

  /** `--name N` as a whole number (at least `min`), or undefined when absent; anything else is a usage error. */
  wholeNumber(value: string | undefined, name: string, min = 0): number | undefined {
    if (value === undefined) return undefined;
    const number = Number(value);
    if (value.trim() === '' || !Number.isInteger(number) || number < min)
      throw new UsageError(
        `--${name} takes a whole number${min > 0 ? ` of at least ${min}` : ''}, not ${JSON.stringify(value)}`,
      );
    return number;
  }

  /** The machine form with --json, the human one otherwise, on stdout. */
  print(value: unknown, human: () => string): void {
    this.io.stdout.write(`${this.values.json === true ? JSON.stringify(value, null, 2) : human()}\n`);
  }

  /** A progress line on stderr (stdout stays the command's output, for --json and pipes). */
  note(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  /** `--flag K=V` values as a record. */
  pairs(values: string[] | undefined, what: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const value of values ?? []) {
      const eq = value.indexOf('=');
      if (eq <= 0) throw new UsageError(`--${what} takes KEY=VALUE, not ${value}`);
      out[value.slice(0, eq)] = value.slice(eq + 1);
    }
    return out;
  }
}

/** Rows as aligned columns under upper-case headers. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cells = rows.map((row) => columns.map((c) => String(row[c] ?? '')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

/** One command group: its usage text and its actions by name (`''` for a group with no action word). */
export interface Command {
  usage: string;
  /** Runs the action; the exit code. The action word is `ctx.rest`'s caller's to pick. */
  actions: Record<string, (ctx: CommandContext, action: string) => Promise<number>>;
  /** Takes the word after the group as an argument (an id), not as an action. */
  argumentFirst?: boolean;
}
