import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseJson, sendJson } from './fake-http.ts';
import type { HostSandboxes } from './host-sandboxes.ts';

/**
 * The Daytona toolbox's sessions (`/process/session...`), as the daemon serves them
 * (apps/daemon/pkg/session: execute.go, input.go, log.go; ../shared/reference/providers/daytona.md §6):
 * - a command's stdin is a FIFO the daemon's wrapper keeps open (`sleep infinity > input.pipe`), so it never
 *   reaches its end; input is written there, with a newline added when it has none, and echoed to the log
 *   as stdout unless the command was started with `suppressInputEcho`;
 * - stdout and stderr are labelled line by line into one log (a last line without a newline gains one);
 * - an async exec answers 202 `{cmdId}`; the exit code appears on the command once it ended;
 * - logs are JSON `{output, stdout, stderr}` for a client that sends `X-Daytona-SDK-Version`, the combined
 *   text otherwise; `follow=true` is served over a WebSocket only;
 * - input to a finished command is 410 Gone.
 * Not modelled: the session's shell state between commands (each command here runs in a shell of its own;
 * the adapter runs one command per session).
 */
interface FakeCommand {
  id: string;
  command: string;
  exitCode?: number;
  log: { stream: 'stdout' | 'stderr'; text: string }[];
  child: ChildProcess;
  suppressInputEcho: boolean;
  ended: Promise<void>;
}

interface FakeSession {
  sessionId: string;
  commands: Map<string, FakeCommand>;
}

type ToolboxError = (status: number, code: string, message: string) => void;

export class DaytonaSessions {
  readonly #host: HostSandboxes;
  readonly #bySandbox = new Map<string, Map<string, FakeSession>>();

  constructor(host: HostSandboxes) {
    this.#host = host;
  }

  /** Serves a `/process/session` route; false when the path is not one. */
  async handle(
    sandbox: { id: string; env: Record<string, string> },
    req: IncomingMessage,
    path: string,
    body: Buffer,
    res: ServerResponse,
    error: ToolboxError,
  ): Promise<boolean> {
    if (!path.startsWith('/process/session')) return false;
    const method = req.method ?? 'GET';
    const sessions = this.#sessionsOf(sandbox.id);
    const [, , , sid, part, cmdId, action] = path.split('/').map(decodeURIComponent);
    if (sid === undefined) {
      if (method === 'GET') {
        sendJson(res, 200, [...sessions.values()].map(view));
        return true;
      }
      if (method === 'POST') {
        const { sessionId } = (parseJson(body) ?? {}) as { sessionId?: unknown };
        if (typeof sessionId !== 'string' || sessionId === '') {
          error(400, 'BAD_REQUEST', 'sessionId is required');
        } else if (sessions.has(sessionId)) {
          error(409, 'CONFLICT', 'session already exists');
        } else {
          sessions.set(sessionId, { sessionId, commands: new Map() });
          res.writeHead(201).end();
        }
        return true;
      }
    }
    const session = sid === undefined ? undefined : sessions.get(sid);
    if (session === undefined) {
      error(404, 'NOT_FOUND', 'session not found');
      return true;
    }
    if (part === undefined && method === 'GET') {
      sendJson(res, 200, view(session));
      return true;
    }
    if (part === undefined && method === 'DELETE') {
      for (const command of session.commands.values()) kill(command.child);
      sessions.delete(session.sessionId);
      res.writeHead(204).end();
      return true;
    }
    if (part === 'exec' && method === 'POST') {
      await this.#exec(
        sandbox,
        session,
        body,
        req.headers['x-daytona-sdk-version'] !== undefined,
        res,
        error,
      );
      return true;
    }
    const command = part === 'command' && cmdId !== undefined ? session.commands.get(cmdId) : undefined;
    if (command === undefined) {
      error(404, 'NOT_FOUND', 'command not found');
      return true;
    }
    if (action === undefined && method === 'GET') {
      sendJson(res, 200, commandView(command));
    } else if (action === 'logs' && method === 'GET') {
      if (new URL(req.url ?? '/', 'http://fake').searchParams.get('follow') === 'true') {
        error(400, 'BAD_REQUEST', 'follow streams over a WebSocket');
      } else if (req.headers['x-daytona-sdk-version'] !== undefined) {
        sendJson(res, 200, logsOf(command, true));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(logsOf(command).output);
      }
    } else if (action === 'input' && method === 'POST') {
      const { data } = (parseJson(body) ?? {}) as { data?: unknown };
      if (typeof data !== 'string') {
        error(400, 'BAD_REQUEST', 'data is required');
      } else if (command.exitCode !== undefined) {
        error(410, 'GONE', `command has already completed with exit code ${command.exitCode}`);
      } else {
        const line = data.endsWith('\n') ? data : `${data}\n`;
        command.child.stdin?.write(line);
        if (!command.suppressInputEcho) command.log.push({ stream: 'stdout', text: line });
        res.writeHead(204).end();
      }
    } else {
      error(404, 'NOT_FOUND', `no toolbox route ${path}`);
    }
    return true;
  }

  async #exec(
    sandbox: { id: string; env: Record<string, string> },
    session: FakeSession,
    body: Buffer,
    split: boolean,
    res: ServerResponse,
    error: ToolboxError,
  ): Promise<void> {
    const b = (parseJson(body) ?? {}) as {
      command?: unknown;
      runAsync?: unknown;
      async?: unknown;
      suppressInputEcho?: unknown;
    };
    if (typeof b.command !== 'string' || b.command.trim() === '')
      return error(400, 'BAD_REQUEST', 'command is required');
    const child = await this.#host.spawn(sandbox.id, b.command, sandbox.env);
    const command: FakeCommand = {
      id: randomUUID(),
      command: b.command,
      log: [],
      child,
      suppressInputEcho: b.suppressInputEcho === true,
      ended: Promise.resolve(),
    };
    const labelled = (stream: 'stdout' | 'stderr') => {
      let partial = '';
      const source = stream === 'stdout' ? child.stdout : child.stderr;
      source?.setEncoding('utf8');
      source?.on('data', (chunk: string) => {
        partial += chunk;
        const lines = partial.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) command.log.push({ stream, text: `${line}\n` });
      });
      return new Promise<void>((resolve) =>
        source?.on('end', () => {
          if (partial !== '') command.log.push({ stream, text: `${partial}\n` });
          resolve();
        }),
      );
    };
    const drained = Promise.all([labelled('stdout'), labelled('stderr')]);
    command.ended = new Promise<void>((resolve) => {
      child.on('close', (code, signal) => {
        void drained.then(() => {
          command.exitCode = code ?? 128 + signalNumber(signal);
          resolve();
        });
      });
    });
    // The daemon's wrapper holds the input FIFO open: the command's stdin never ends.
    child.stdin?.on('error', () => undefined);
    session.commands.set(command.id, command);
    if (b.runAsync === true || b.async === true) return sendJson(res, 202, { cmdId: command.id });
    await command.ended;
    // A client that names its SDK version gets the streams apart (and the raw, marked log as output).
    const logs = logsOf(command, split);
    sendJson(res, 200, {
      cmdId: command.id,
      output: logs.output,
      exitCode: command.exitCode,
      ...(split && { stdout: logs.stdout, stderr: logs.stderr }),
    });
  }

  #sessionsOf(sandboxId: string): Map<string, FakeSession> {
    let sessions = this.#bySandbox.get(sandboxId);
    if (sessions === undefined) {
      sessions = new Map();
      this.#bySandbox.set(sandboxId, sessions);
    }
    return sessions;
  }

  /** The sandbox's sessions end with it (delete, stop). */
  end(sandboxId: string): void {
    for (const session of this.#bySandbox.get(sandboxId)?.values() ?? [])
      for (const command of session.commands.values()) kill(command.child);
    this.#bySandbox.delete(sandboxId);
  }

  endAll(): void {
    for (const id of [...this.#bySandbox.keys()]) this.end(id);
  }
}

function view(session: FakeSession) {
  return { sessionId: session.sessionId, commands: [...session.commands.values()].map(commandView) };
}

function commandView(command: FakeCommand) {
  return {
    id: command.id,
    command: command.command,
    ...(command.exitCode !== undefined && { exitCode: command.exitCode }),
  };
}

/** With markers, `output` is the raw log: each line after its stream's marker (as the daemon keeps it). */
function logsOf(command: FakeCommand, markers = false) {
  const marker = { stdout: '\x01\x01\x01', stderr: '\x02\x02\x02' };
  const of = (stream: 'stdout' | 'stderr') =>
    command.log
      .filter((entry) => entry.stream === stream)
      .map((entry) => entry.text)
      .join('');
  return {
    output: command.log.map((entry) => (markers ? marker[entry.stream] : '') + entry.text).join(''),
    stdout: of('stdout'),
    stderr: of('stderr'),
  };
}

function kill(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal === null ? 0 : ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 }[signal as string] ?? 0);
}
