/**
 * Interactive processes on Daytona (feature `exec.stdin`), over the toolbox's sessions: one session per
 * process, named by its pid (`differently-p<pid>`), running one async command. Everything lives in the
 * sandbox (the session in Daytona's daemon, the read position in a file), so any container answers any
 * call. What Daytona's sessions give, and how this stands in for what they do not:
 * - The daemon keeps a command's stdin open for ever and adds a newline to input that has none: input is
 *   text, delivered line by line. Closing stdin is a line only this process's wrapper knows (a random
 *   word in its launch), on which the wrapper closes the command's own stdin.
 * - Output is kept whole by the daemon, labelled line by line (a last fragment gains a newline); what a
 *   caller has taken is remembered in a file beside the process (two callers reading at once may both
 *   receive the same output). Nothing is dropped and there is no backpressure: the log grows.
 * - Signals go through a one-shot command (`kill` of the pid the wrapper wrote).
 * - No terminal (exec.pty): Daytona's PTY runs only the login shell, takes input over a WebSocket only, sends
 *   output to the clients connected at that moment and forgets its exit code when it ends, so output made
 *   while detached and the exit of a process nobody watched would be lost (docs/adapters.md).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import type { CallOptions, ExecEmit } from '../../lib/adapter/port.ts';
import type {
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { ApiError, isApiError } from '../../lib/errors.ts';
import { safeParseJsonText } from '../../lib/json-text.ts';
import * as z from '../../lib/zod.ts';
import { shellQuote } from '../httpx/shell-quote.ts';
import { sleep } from '../httpx/sleep.ts';

const sessionPrefix = 'differently-p';
/** An SDK version at which the daemon's session answers have their current shape (daytona.md §6). */
const sdkVersion = '0.190.0';
const launchMarker = ': differently-process ';
/** Where each process's wrapper keeps its pid and input pipe, and its read position beside. */
const stateDir = '/tmp/.differently-processes';
/** Live processes per sandbox, and how many ended ones stay listed. */
const maxLive = 16;
const keepEnded = 16;

const commandSchema = z.looseObject({
  id: z.string(),
  command: z.string(),
  exitCode: z.nullish(z.int()),
});
const sessionSchema = z.looseObject({
  sessionId: z.string(),
  commands: z.nullish(z.array(commandSchema)),
});
export const daytonaSessionListSchema = z.array(sessionSchema);
export const daytonaSessionSchema = sessionSchema;
export const daytonaExecAsyncSchema = z.looseObject({ cmdId: z.string() });
export const daytonaLogsSchema = z.looseObject({
  stdout: z.optional(z.string()),
  stderr: z.optional(z.string()),
});

/** What the process launch carries, read back by list and every call. */
const launchSchema = z.object({
  argv: z.array(z.string()),
  cwd: z.string(),
  tag: z.nullable(z.string()),
  startedAt: z.string(),
  eof: z.string(),
});
type Launch = z.infer<typeof launchSchema>;

/** How much of each stream callers have taken (kept apart from the closed-stdin mark: neither write undoes the other). */
const positionSchema = z.object({ stdout: z.int(), stderr: z.int() });
type Position = z.infer<typeof positionSchema>;

/**
 * The wrapper, run by `sh -c` with: state dir, end-of-input word, timeout (s), cwd, argv. It gives the
 * command a pipe of its own as stdin, fed line by line from the session's input until the word; writes the
 * command's pid for signals; ends the command at its timeout; answers with the command's exit code.
 */
const wrapper = [
  'd=$1; e=$2; t=$3; w=$4; shift 4',
  'cd "$w" || exit 1',
  'mkdir -p "$d" && rm -f "$d/in" && mkfifo "$d/in" || exit 125',
  'exec 3<&0',
  '"$@" < "$d/in" & c=$!',
  'echo "$c" > "$d/pid"',
  'exec 4> "$d/in"',
  '( while IFS= read -r l; do [ "$l" = "$e" ] && break; printf "%s\\n" "$l" >&4; done ) <&3 & r=$!',
  'exec 3<&- 4>&-',
  '( trap \'kill $! 2>/dev/null; exit 0\' TERM; sleep "$t" & wait $!; kill -9 "$c" 2>/dev/null ) & k=$!',
  'wait "$c"; s=$?',
  'kill "$r" "$k" 2>/dev/null',
  'rm -rf "$d"',
  'exit "$s"',
].join('\n');

/** The toolbox calls the processes need, bound to one adapter's credentials and proxies. */
export interface DaytonaToolbox {
  json<S extends z.ZodMiniType>(
    ref: string,
    method: string,
    path: string,
    schema: S,
    options: { json?: unknown; signal?: AbortSignal | undefined; headers?: Record<string, string> },
  ): Promise<z.infer<S>>;
  send(
    ref: string,
    method: string,
    path: string,
    options: { json?: unknown; signal?: AbortSignal | undefined; accept?: number[] },
  ): Promise<void>;
  /** A one-shot command (`/process/execute`), its exit code. */
  execute(ref: string, command: string, signal?: AbortSignal): Promise<number>;
  readFile(ref: string, path: string, opts?: CallOptions): Promise<Uint8Array>;
  writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void>;
}

interface Found {
  pid: number;
  sessionId: string;
  cmdId: string;
  launch: Launch;
  exitCode: number | null;
}

export class DaytonaProcesses {
  readonly #toolbox: DaytonaToolbox;
  readonly #pollMs: number;

  constructor(toolbox: DaytonaToolbox, pollIntervalMs: number) {
    this.#toolbox = toolbox;
    // Output is polled while attached: often enough to feel live, whatever the pool's state polling is.
    this.#pollMs = Math.min(pollIntervalMs, 250);
  }

  async start(ref: string, request: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo> {
    if (request.pty !== undefined)
      throw adapterErrors.unsupported('a terminal (exec.pty)', {
        adapter: 'daytona',
        reason:
          "Daytona's terminal runs only its login shell, over a WebSocket, and keeps neither output nor exit for a later attach; its sessions give stdin",
      });
    const ours = await this.#all(ref, opts);
    if (ours.filter((found) => found.exitCode === null).length >= maxLive)
      throw new ApiError(
        'quota_exceeded',
        `a sandbox runs at most ${maxLive} interactive processes at once`,
        {
          limit: maxLive,
        },
      );
    await this.#prune(ref, ours, opts);
    const argv = request.shell ? ['/bin/sh', '-c', ...request.argv] : [...request.argv];
    const launch: Launch = {
      argv,
      cwd: request.cwd ?? '.',
      tag: request.tag ?? null,
      startedAt: new Date().toISOString(),
      eof: `differently-end-of-input-${randomBytes(12).toString('hex')}`,
    };
    let pid = 0;
    for (let attempt = 0; ; attempt++) {
      pid = randomInt(1, 2 ** 31 - 1);
      try {
        await this.#toolbox.send(ref, 'POST', '/process/session', {
          json: { sessionId: `${sessionPrefix}${pid}` },
          signal: opts?.signal,
        });
        break;
      } catch (error) {
        // Another process took that pid: draw again.
        if (attempt >= 3 || !isApiError(error) || error.details.status !== 409) throw error;
      }
    }
    const env = Object.entries(request.env).map(([key, value]) => `${key}=${shellQuote([value])}`);
    const command = [
      `${launchMarker}${Buffer.from(JSON.stringify(launch)).toString('base64url')};`,
      ...env,
      shellQuote([
        'sh',
        '-c',
        wrapper,
        'differently',
        `${stateDir}/p${pid}`,
        launch.eof,
        String(request.timeoutSeconds),
        launch.cwd,
        ...argv,
      ]),
    ].join(' ');
    await this.#toolbox.json(
      ref,
      'POST',
      `/process/session/${sessionPrefix}${pid}/exec`,
      daytonaExecAsyncSchema,
      {
        json: { command, runAsync: true, suppressInputEcho: true },
        signal: opts?.signal,
      },
    );
    return this.#info({ pid, sessionId: '', cmdId: '', launch, exitCode: null }, false);
  }

  async list(ref: string, opts?: CallOptions): Promise<ProcessInfo[]> {
    const ours = await this.#all(ref, opts);
    return Promise.all(
      ours.map(async (found) => this.#info(found, await this.#stdinClosed(ref, found.pid, opts))),
    );
  }

  async attach(ref: string, pid: number, emit: ExecEmit, opts?: CallOptions): Promise<number | undefined> {
    for (;;) {
      const output = await this.read(ref, pid, 1024 * 1024, opts);
      for (const event of output.events) await emit(event);
      if (output.exitCode !== null) return output.exitCode;
      if (opts?.signal?.aborted === true) return undefined;
      // More may be waiting right behind what was just taken: ask again at once.
      if (output.events.length > 0) continue;
      try {
        await sleep(this.#pollMs, opts?.signal);
      } catch {
        return undefined;
      }
    }
  }

  async read(ref: string, pid: number, maxBytes: number, opts?: CallOptions): Promise<ProcessOutput> {
    // The exit code first: once it is there, the log read after it is whole.
    const found = await this.#one(ref, pid, opts);
    const logs = await this.#toolbox.json(
      ref,
      'GET',
      `/process/session/${found.sessionId}/command/${found.cmdId}/logs`,
      daytonaLogsSchema,
      // The daemon parts stdout from stderr (as JSON) only for a client that names an SDK version.
      { signal: opts?.signal, headers: { 'X-Daytona-SDK-Version': sdkVersion } },
    );
    const position = await this.#position(ref, pid, opts);
    const stdout = (logs.stdout ?? '').slice(position.stdout);
    const stderr = (logs.stderr ?? '').slice(position.stderr);
    const takeOut = stdout.slice(0, maxBytes);
    const takeErr = stderr.slice(0, Math.max(0, maxBytes - takeOut.length));
    const events = [
      ...(takeOut === '' ? [] : [{ stream: 'stdout' as const, data: takeOut }]),
      ...(takeErr === '' ? [] : [{ stream: 'stderr' as const, data: takeErr }]),
    ];
    if (events.length > 0)
      await this.#savePosition(
        ref,
        pid,
        { stdout: position.stdout + takeOut.length, stderr: position.stderr + takeErr.length },
        opts,
      );
    const allTaken = takeOut.length === stdout.length && takeErr.length === stderr.length;
    return { events, dropped: false, exitCode: allTaken ? found.exitCode : null };
  }

  async write(ref: string, pid: number, data: Uint8Array, opts?: CallOptions): Promise<void> {
    const found = await this.#running(ref, pid, 'write to', opts);
    if (await this.#stdinClosed(ref, pid, opts))
      throw adapterErrors.invalidState(`the stdin of process ${pid} is closed`, { pid });
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(data);
    } catch {
      throw adapterErrors.invalidRequest("Daytona's session input takes text (UTF-8), not raw bytes", {
        pid,
      });
    }
    await this.#input(ref, found, text, opts);
  }

  async closeStdin(ref: string, pid: number, opts?: CallOptions): Promise<void> {
    const found = await this.#running(ref, pid, 'close the stdin of', opts);
    if (await this.#stdinClosed(ref, pid, opts)) return;
    await this.#input(ref, found, `${found.launch.eof}\n`, opts);
    await this.#toolbox.writeFile(ref, statePath(pid, 'closed'), new Uint8Array(), opts);
  }

  async resize(ref: string, pid: number, _size: TerminalSize, opts?: CallOptions): Promise<void> {
    await this.#running(ref, pid, 'resize', opts);
    throw adapterErrors.invalidRequest(`process ${pid} has no terminal to resize`, { pid });
  }

  async signal(ref: string, pid: number, signal: ProcessSignal, opts?: CallOptions): Promise<void> {
    await this.#running(ref, pid, 'signal', opts);
    const pidFile = `${stateDir}/p${pid}/pid`;
    await this.#toolbox.execute(
      ref,
      `kill -s ${signal.slice('SIG'.length)} "$(cat ${shellQuote([pidFile])})" 2>/dev/null || true`,
      opts?.signal,
    );
  }

  async #input(ref: string, found: Found, text: string, opts?: CallOptions): Promise<void> {
    try {
      await this.#toolbox.send(
        ref,
        'POST',
        `/process/session/${found.sessionId}/command/${found.cmdId}/input`,
        { json: { data: text }, signal: opts?.signal },
      );
    } catch (error) {
      // 410: it ended between our look and the write.
      if (isApiError(error) && error.details.status === 410)
        throw adapterErrors.invalidState(`process ${found.pid} has exited`, { pid: found.pid });
      throw error;
    }
  }

  async #running(ref: string, pid: number, what: string, opts?: CallOptions): Promise<Found> {
    const found = await this.#one(ref, pid, opts);
    if (found.exitCode !== null)
      throw adapterErrors.invalidState(
        `cannot ${what} process ${pid}: it exited with code ${found.exitCode}`,
        {
          pid,
          exitCode: found.exitCode,
        },
      );
    return found;
  }

  async #one(ref: string, pid: number, opts?: CallOptions): Promise<Found> {
    const notFound = () =>
      new ApiError('not_found', `no process ${pid} in this sandbox (it never ran, or ended long ago)`, {
        pid,
      });
    let session: z.infer<typeof sessionSchema>;
    try {
      session = await this.#toolbox.json(
        ref,
        'GET',
        `/process/session/${sessionPrefix}${pid}`,
        sessionSchema,
        {
          signal: opts?.signal,
        },
      );
    } catch (error) {
      if (isApiError(error) && error.details.status === 404) throw notFound();
      throw error;
    }
    const found = foundOf(session);
    if (found === undefined) throw notFound();
    return found;
  }

  async #all(ref: string, opts?: CallOptions): Promise<Found[]> {
    const sessions = await this.#toolbox.json(ref, 'GET', '/process/session', daytonaSessionListSchema, {
      signal: opts?.signal,
    });
    return sessions.map(foundOf).filter((found): found is Found => found !== undefined);
  }

  /** Ended processes beyond the newest `keepEnded` are forgotten (their sessions deleted). */
  async #prune(ref: string, ours: Found[], opts?: CallOptions): Promise<void> {
    const ended = ours
      .filter((found) => found.exitCode !== null)
      .sort((a, b) => b.launch.startedAt.localeCompare(a.launch.startedAt))
      .slice(keepEnded - 1);
    for (const found of ended)
      await this.#toolbox.send(ref, 'DELETE', `/process/session/${found.sessionId}`, {
        signal: opts?.signal,
        accept: [404],
      });
  }

  /** A state file's bytes; undefined when it is not there. */
  async #state(ref: string, pid: number, name: 'read.json' | 'closed', opts?: CallOptions) {
    try {
      return await this.#toolbox.readFile(ref, statePath(pid, name), opts);
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  async #position(ref: string, pid: number, opts?: CallOptions): Promise<Position> {
    const bytes = await this.#state(ref, pid, 'read.json', opts);
    const parsed =
      bytes === undefined ? undefined : safeParseJsonText(positionSchema, new TextDecoder().decode(bytes));
    return parsed?.success === true ? parsed.data : { stdout: 0, stderr: 0 };
  }

  async #savePosition(ref: string, pid: number, position: Position, opts?: CallOptions): Promise<void> {
    const bytes = new TextEncoder().encode(JSON.stringify(position));
    await this.#toolbox.writeFile(ref, statePath(pid, 'read.json'), bytes, opts);
  }

  async #stdinClosed(ref: string, pid: number, opts?: CallOptions): Promise<boolean> {
    return (await this.#state(ref, pid, 'closed', opts)) !== undefined;
  }

  #info(found: Found, closed: boolean): ProcessInfo {
    return {
      pid: found.pid,
      argv: found.launch.argv,
      cwd: found.launch.cwd,
      pty: null,
      tag: found.launch.tag,
      startedAt: found.launch.startedAt,
      exitCode: found.exitCode,
      stdinOpen: found.exitCode === null && !closed,
      // Daytona does not say who reads a command's log.
      attached: 0,
    };
  }
}

/** Beside the wrapper's folder (which it removes when the command ends), so they outlive the command. */
function statePath(pid: number, name: 'read.json' | 'closed'): string {
  return `${stateDir}/p${pid}.${name}`;
}

/** A session this adapter started: its pid, its one command and what it was launched with. */
function foundOf(session: z.infer<typeof sessionSchema>): Found | undefined {
  if (!session.sessionId.startsWith(sessionPrefix)) return undefined;
  const pid = Number(session.sessionId.slice(sessionPrefix.length));
  const command = session.commands?.[0];
  if (!Number.isInteger(pid) || command === undefined || !command.command.startsWith(launchMarker))
    return undefined;
  const encoded = command.command.slice(launchMarker.length).split(';')[0] ?? '';
  const launch = safeParseJsonText(launchSchema, Buffer.from(encoded, 'base64url').toString('utf8'));
  if (!launch.success) return undefined;
  return {
    pid,
    sessionId: session.sessionId,
    cmdId: command.id,
    launch: launch.data,
    exitCode: command.exitCode ?? null,
  };
}
