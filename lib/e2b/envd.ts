import { randomInt } from 'node:crypto';
import { posix } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { FileInfo } from '../adapter/port.ts';
import { errors, toErrorResponse } from '../errors.ts';
import { safeParseJsonText } from '../json-text.ts';
import type { Log } from '../log.ts';
import type { StreamWrite } from '../sandboxes/exec-stream.ts';
import { maxStreamSeconds as maxExecStreamSeconds } from '../sandboxes/exec-stream.ts';
import type { AttachLine, SandboxProcesses } from '../sandboxes/processes.ts';
import { maxFileBytes, type SandboxOperations } from '../sandboxes/sandbox-operations.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import { envSchema } from '../schemas/common.ts';
import { maxStdinBytesPerRequest } from '../schemas/processes.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import * as z from '../zod.ts';
import { processDir, wrappedCommand } from './command-wrappers.ts';
import { type ConnectCode, ConnectError, endStream, envelope, firstEnvelope } from './connect-protocol.ts';
import { type E2bAnswer, e2bError, parseBody } from './control-api.ts';
import {
  closeStdinSchema,
  listDirSchema,
  moveSchema,
  pathRequestSchema,
  processConnectSchema,
  processStartSchema,
  processUpdateSchema,
  sendInputSchema,
  sendSignalSchema,
} from './schemas.ts';
import { deliverStreamInput } from './stream-input.ts';

/**
 * envd, E2B's in-sandbox daemon, served from the control plane: each call is the caller's own REST
 * operation on the sandbox (exec, files), so it works on every pool and obeys the same limits.
 */
export interface E2bEnvdDeps {
  sandboxes: SandboxService;
  operations: SandboxOperations;
  processes: SandboxProcesses;
  log: Log;
}

/** The home E2B's envd resolves relative paths against, and where commands run without a cwd. */
export const e2bHome = '/home/user';
/** Sent while a command is silent: the SDK asks for a keep-alive every 50 s (Keepalive-Ping-Interval). */
const keepAliveMs = 50_000;

/** A process whose entry was not touched for this long has ended without cleaning up (its VM stopped). */
const staleProcessMs = 10_000;

const signalNames: Record<string, 'KILL' | 'TERM'> = {
  SIGNAL_SIGKILL: 'KILL',
  SIGNAL_SIGTERM: 'TERM',
  '9': 'KILL',
  '15': 'TERM',
};

/** A process's output line as envd's event: a terminal's output is `pty`, base64 like the others. */
function dataEvent(line: { stream: 'stdout' | 'stderr'; data: string }, pty: boolean) {
  const data = Buffer.from(line.data, 'utf8').toString('base64');
  return { event: { data: pty ? { pty: data } : { [line.stream]: data } } };
}

/** Whether an error says the pool has no interactive processes (so the exec-based path serves the call). */
function notOffered(error: unknown): boolean {
  return toErrorResponse(error).body.error.code === 'unsupported_operation';
}

/** Differently's error codes as Connect's. */
const connectCodeOf: Record<string, ConnectCode> = {
  not_found: 'not_found',
  invalid_request: 'invalid_argument',
  payload_too_large: 'invalid_argument',
  unauthenticated: 'unauthenticated',
  forbidden: 'permission_denied',
  invalid_state: 'failed_precondition',
  unsupported_capability: 'failed_precondition',
  conflict: 'already_exists',
  quota_exceeded: 'resource_exhausted',
  unsupported_operation: 'unimplemented',
  method_not_allowed: 'unimplemented',
  provider_unavailable: 'unavailable',
  gateway_timeout: 'deadline_exceeded',
};

/** Any thrown error as Connect's code and message (internal errors masked, as everywhere). */
export function connectErrorOf(error: unknown): { code: ConnectCode; message: string; masked: boolean } {
  if (error instanceof ConnectError) return { code: error.code, message: error.message, masked: false };
  const { body, masked } = toErrorResponse(error);
  return { code: connectCodeOf[body.error.code] ?? 'internal', message: body.error.message, masked };
}

/** An envd path: absolute as given, relative to the home otherwise. */
export function envdPath(path: string): string {
  return posix.resolve(e2bHome, path);
}

export class E2bEnvd {
  readonly #deps: E2bEnvdDeps;

  constructor(deps: E2bEnvdDeps) {
    this.#deps = deps;
  }

  /** 204 while the sandbox runs, 502 otherwise: what the SDK's isRunning() reads. */
  async health(principal: OrgPrincipal, id: string): Promise<E2bAnswer> {
    const sandbox = await this.#deps.sandboxes.get(principal, id);
    return sandbox.status === 'running'
      ? { status: 204 }
      : e2bError(502, `sandbox ${id} is ${sandbox.status}`);
  }

  /**
   * process.Process/Start: a command streamed as Connect events (start, data as base64, end), through the
   * streamed exec every pool has. Checks happen before the first event, so a refusal is the stream's only
   * message. A terminal (pty) and streamed stdin are not offered, and are refused rather than ignored.
   */
  async processStart(
    principal: OrgPrincipal,
    id: string,
    body: Buffer,
    deadlineMs: number | undefined,
    cancelled: AbortSignal | undefined,
    /** root: as the sandbox's superuser (the facade checked the pool offers it). */
    user?: 'root',
  ): Promise<(write: StreamWrite) => Promise<void>> {
    let refusal: { code: ConnectCode; message: string } | undefined;
    try {
      const request = parseConnect(processStartSchema, firstEnvelope(body), 'process.Start');
      const env = envSchema.safeParse(request.process.envs);
      if (!env.success)
        throw new ConnectError('invalid_argument', `envs: ${env.error.issues[0]?.message ?? 'invalid'}`);
      const size = ptySizeOf(request.pty);
      const cwd = envdPath(request.process.cwd ?? e2bHome);
      // A command without stdin or a terminal is a streamed exec (no process kept for it: the fast path,
      // docs/e2b.md); only one with stdin or a pty is an interactive process, which can be attached again.
      if (request.stdin !== true && size === undefined)
        return await this.#execStart(principal, id, request, env.data, cwd, deadlineMs, cancelled, user);
      const interactive = await this.#deps.processes
        .startAttached(
          principal,
          id,
          {
            args: [request.process.cmd, ...request.process.args],
            env: env.data,
            cwd,
            ...(size !== undefined && { pty: size }),
            ...(request.tag !== undefined && { tag: request.tag }),
            ...(user !== undefined && { user }),
            // E2B's default: a command's stdin is closed unless it asked for it (a terminal always has one).
            stdin: request.stdin === true || size !== undefined,
            // The command's timeout is the call's deadline (E2B's timeoutMs); none: the default hour.
            ...(deadlineMs !== undefined &&
              deadlineMs > 0 && { timeoutSeconds: Math.max(1, Math.ceil(deadlineMs / 1000)) }),
          },
          cancelled,
        )
        .catch((error: unknown) => {
          if (notOffered(error))
            throw new ConnectError(
              'unimplemented',
              `${size !== undefined ? 'a terminal (pty)' : "a command's stdin"} is not offered by this sandbox's pool: ${toErrorResponse(error).body.error.message} (docs/e2b.md)`,
            );
          throw error;
        });
      return this.#eventStream(interactive.process.pid, size !== undefined, interactive.produce);
    } catch (error) {
      const { code, message, masked } = connectErrorOf(error);
      if (masked) this.#deps.log.error('E2B process.Start failed', { sandboxId: id, error: String(error) });
      refusal = { code, message };
    }
    return async (write) => {
      await write(endStream(refusal));
    };
  }

  /** process.Connect: attach to a process started by process.Start, by pid or by tag. */
  async processConnect(
    principal: OrgPrincipal,
    id: string,
    body: Buffer,
    cancelled: AbortSignal | undefined,
  ): Promise<(write: StreamWrite) => Promise<void>> {
    try {
      const request = parseConnect(processConnectSchema, firstEnvelope(body), 'process.Connect');
      const pid = await this.#pidOf(principal, id, request.process);
      const view = await this.#deps.processes.get(principal, id, pid).catch(async (error: unknown) => {
        // A command started without stdin runs as a streamed exec, whose output goes to its one caller.
        if ((await this.#processes(principal, id)).some((command) => command.pid === pid))
          throw new ConnectError(
            'failed_precondition',
            `command ${pid} was started without stdin: only a command started with stdin: true (or a terminal) can be attached again (docs/e2b.md)`,
          );
        throw error;
      });
      const produce = await this.#deps.processes.attach(principal, id, pid, cancelled);
      return this.#eventStream(pid, view.pty !== null, produce);
    } catch (error) {
      const { code, message, masked } = connectErrorOf(error);
      if (masked) this.#deps.log.error('E2B process.Connect failed', { sandboxId: id, error: String(error) });
      return async (write) => {
        await write(endStream({ code, message }));
      };
    }
  }

  /**
   * process.StreamInput: the client stream's input, delivered in order (./stream-input.ts). Answered as a
   * Connect stream: the one (empty) response message and the end, or the end with the error.
   */
  async streamInput(principal: OrgPrincipal, id: string, body: Buffer): Promise<Buffer> {
    try {
      await deliverStreamInput(body, {
        pidOf: (selector) => this.#pidOf(principal, id, selector),
        write: (pid, dataBase64) => this.#deps.processes.stdin(principal, id, pid, { dataBase64 }),
      });
      return Buffer.concat([envelope({}), endStream()]);
    } catch (error) {
      const { code, message, masked } = connectErrorOf(error);
      if (masked)
        this.#deps.log.error('E2B process.StreamInput failed', { sandboxId: id, error: String(error) });
      return endStream({ code, message });
    }
  }

  /** An attach as envd's events: start, data, end (or the error), with keep-alives while it is silent. */
  #eventStream(
    pid: number,
    pty: boolean,
    produce: (send: (line: AttachLine) => void | Promise<void>) => Promise<void>,
  ): (write: StreamWrite) => Promise<void> {
    return async (write) => {
      let last = Date.now();
      const send = async (message: unknown) => {
        last = Date.now();
        await write(envelope(message));
      };
      const keepAlive = setInterval(() => {
        if (Date.now() - last >= keepAliveMs) void send({ event: { keepalive: {} } });
      }, keepAliveMs / 5);
      try {
        await send({ event: { start: { pid } } });
        let ended: Buffer | undefined;
        await produce(async (line) => {
          if ('stream' in line) await send(dataEvent(line, pty));
          else if ('exitCode' in line) {
            // The end event and the end of the stream go in one write: one chunk less on every command.
            const end = { exitCode: line.exitCode, exited: true, status: `exit status ${line.exitCode}` };
            ended = Buffer.concat([envelope({ event: { end } }), endStream()]);
          } else if ('error' in line) {
            ended = endStream({
              code: connectCodeOf[line.error.code] ?? 'internal',
              message: line.error.message,
            });
          } else if ('detached' in line) {
            // The stream's time is up, the process runs on: the SDK's handle can connect again.
            ended = endStream({ code: 'deadline_exceeded', message: line.detached.reason });
          }
        });
        await write(
          ended ?? endStream({ code: 'internal', message: 'the command ended without an exit code' }),
        );
      } finally {
        clearInterval(keepAlive);
      }
    };
  }

  /** process.Start on a pool without interactive processes: the streamed exec, wrapped for List and SendSignal. */
  async #execStart(
    principal: OrgPrincipal,
    id: string,
    request: z.infer<typeof processStartSchema>,
    env: Record<string, string>,
    cwd: string,
    deadlineMs: number | undefined,
    cancelled: AbortSignal | undefined,
    user: 'root' | undefined,
  ): Promise<(write: StreamWrite) => Promise<void>> {
    const timeoutSeconds = Math.min(
      maxExecStreamSeconds,
      deadlineMs === undefined ? maxExecStreamSeconds : Math.max(1, Math.ceil(deadlineMs / 1000)),
    );
    const pid = 1000 + randomInt(2_000_000_000);
    // What List answers for it (its env's values stay out: they would be on the command line).
    const config = JSON.stringify({
      cmd: request.process.cmd,
      args: request.process.args,
      cwd,
      ...(request.tag !== undefined && { tag: request.tag }),
    });
    const produce = await this.#deps.sandboxes.execStream(
      principal,
      id,
      {
        args: wrappedCommand(request.process.cmd, request.process.args, String(pid), config),
        env,
        cwd,
        timeoutSeconds,
        ...(user !== undefined && { user }),
      },
      cancelled,
    );
    // The pid names the command in List and SendSignal (it is not the process id inside the sandbox).
    return this.#eventStream(pid, false, produce);
  }

  /** A process selector's pid: given, or the running process with that tag. */
  async #pidOf(
    principal: OrgPrincipal,
    id: string,
    selector: { pid?: number | undefined; tag?: string | undefined },
  ) {
    if (selector.pid !== undefined) return selector.pid;
    const tagged = (await this.#deps.processes.list(principal, id)).find(
      (process) => process.tag === selector.tag && process.exitCode === null,
    );
    if (tagged === undefined)
      throw new ConnectError('not_found', `no running process tagged ${selector.tag}`);
    return tagged.pid;
  }

  /** The unary filesystem calls; the process calls Differently does not offer answer `unimplemented`. */
  async unary(principal: OrgPrincipal, id: string, method: string, input: unknown): Promise<unknown> {
    switch (method) {
      case 'filesystem.Filesystem/ListDir': {
        const { path, depth } = parseConnect(listDirSchema, input, 'ListDir');
        return { entries: await this.#list(principal, id, envdPath(path), Math.max(1, depth ?? 1)) };
      }
      case 'filesystem.Filesystem/Stat': {
        const { path } = parseConnect(pathRequestSchema, input, 'Stat');
        return { entry: await this.#stat(principal, id, envdPath(path)) };
      }
      case 'filesystem.Filesystem/MakeDir': {
        const path = envdPath(parseConnect(pathRequestSchema, input, 'MakeDir').path);
        await this.#script(principal, id, 'if [ -e "$1" ]; then exit 17; fi; mkdir -p -- "$1"', [path], {
          17: ['already_exists', `${path} already exists`],
        });
        return { entry: await this.#stat(principal, id, path) };
      }
      case 'filesystem.Filesystem/Remove': {
        const path = envdPath(parseConnect(pathRequestSchema, input, 'Remove').path);
        await this.#script(
          principal,
          id,
          'if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit 2; fi; rm -rf -- "$1"',
          [path],
          {
            2: ['not_found', `no file or directory at ${path}`],
          },
        );
        return {};
      }
      case 'filesystem.Filesystem/Move': {
        const request = parseConnect(moveSchema, input, 'Move');
        const [source, destination] = [envdPath(request.source), envdPath(request.destination)];
        await this.#script(
          principal,
          id,
          'if [ ! -e "$1" ] && [ ! -L "$1" ]; then exit 2; fi; mkdir -p -- "$(dirname -- "$2")" && mv -- "$1" "$2"',
          [source, destination],
          { 2: ['not_found', `no file or directory at ${source}`] },
        );
        return { entry: await this.#stat(principal, id, destination) };
      }
      case 'process.Process/List': {
        // Both kinds: the interactive processes (stdin, terminals) and the commands run as streamed execs.
        const [interactive, commands] = await Promise.all([
          this.#interactive(principal, id),
          this.#processes(principal, id),
        ]);
        return {
          processes: [
            ...(interactive ?? [])
              .filter((process) => process.exitCode === null)
              .map((process) => ({
                pid: process.pid,
                ...(process.tag !== null && { tag: process.tag }),
                config: {
                  cmd: process.argv[0] ?? '',
                  args: process.argv.slice(1),
                  envs: {},
                  cwd: process.cwd,
                },
              })),
            ...commands,
          ],
        };
      }
      case 'process.Process/SendInput': {
        const request = parseConnect(sendInputSchema, input, 'SendInput');
        const data = request.input.pty ?? request.input.stdin ?? '';
        const bytes = Buffer.from(data, 'base64');
        if (bytes.length > maxStdinBytesPerRequest)
          throw new ConnectError(
            'invalid_argument',
            `input is at most ${maxStdinBytesPerRequest} bytes a call`,
          );
        await this.#deps.processes.stdin(principal, id, request.process.pid, { dataBase64: data });
        return {};
      }
      case 'process.Process/CloseStdin': {
        const request = parseConnect(closeStdinSchema, input, 'CloseStdin');
        await this.#deps.processes.stdin(principal, id, request.process.pid, { close: true });
        return {};
      }
      case 'process.Process/Update': {
        const request = parseConnect(processUpdateSchema, input, 'Update');
        if (request.pty?.size === undefined) return {};
        await this.#deps.processes.resize(principal, id, request.process.pid, request.pty.size);
        return {};
      }
      case 'process.Process/SendSignal': {
        const request = parseConnect(sendSignalSchema, input, 'SendSignal');
        const signal = signalNames[String(request.signal)];
        if (signal === undefined)
          throw new ConnectError(
            'invalid_argument',
            `signal ${request.signal} is not offered (SIGKILL, SIGTERM)`,
          );
        const pid = request.process.pid;
        const interactive = await this.#interactive(principal, id);
        if (interactive?.some((process) => process.pid === pid && process.exitCode === null)) {
          await this.#deps.processes.signal(principal, id, pid, `SIG${signal}`);
          return {};
        }
        // Otherwise a command run as a streamed exec; an ended one is not there to signal: kill() answers
        // false, as E2B's does.
        if (!(await this.#processes(principal, id)).some((process) => process.pid === pid)) {
          throw new ConnectError('not_found', `no running command with pid ${pid}`);
        }
        await this.#deps.operations.writeFile(
          principal,
          id,
          `${processDir}/signals/${pid}`,
          Buffer.from(signal),
        );
        return {};
      }
      default:
        throw new ConnectError(
          'unimplemented',
          `${method} is not offered by Differently's E2B facade (docs/e2b.md lists what is)`,
        );
    }
  }

  /** The sandbox's interactive processes; undefined where its pool has none (the exec-based path's pools). */
  async #interactive(principal: OrgPrincipal, id: string) {
    return this.#deps.processes.list(principal, id).catch((error: unknown) => {
      if (notOffered(error)) return undefined;
      throw error;
    });
  }

  /** The commands started through process.Start that still run (their entries fresh). */
  async #processes(principal: OrgPrincipal, id: string) {
    const entries = await this.#deps.operations
      .listFiles(principal, id, `${processDir}/procs`)
      .catch((error: unknown) => {
        if (connectErrorOf(error).code === 'not_found') return [];
        throw error;
      });
    const now = Date.now();
    const processes: {
      pid: number;
      tag?: string;
      config: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string };
    }[] = [];
    for (const entry of entries) {
      const pid = Number(entry.name);
      // An empty entry is a command that ended (its wrapper emptied it); a stale one, one whose VM stopped.
      if (!Number.isInteger(pid) || entry.size === 0) continue;
      if (now - Date.parse(entry.modifiedAt ?? '') > staleProcessMs) continue;
      const text = await this.#deps.operations.readFile(principal, id, entry.path).catch(() => undefined);
      const config = safeParseJsonText(processConfigSchema, text?.toString('utf8') ?? '');
      if (!config.success) continue;
      const { tag, ...rest } = config.data;
      processes.push({ pid, ...(tag !== undefined && { tag }), config: { ...rest, envs: {} } });
    }
    return processes;
  }

  /** GET /files: the file's bytes. */
  async readFile(principal: OrgPrincipal, id: string, path: string): Promise<Buffer> {
    return this.#deps.operations.readFile(principal, id, envdPath(path));
  }

  /**
   * POST /files: one file as octet-stream (gzip when Content-Encoding says so) at `path`, or files as
   * multipart form fields named `file`, each at `path` or at its own filename (the SDK's writeFiles).
   */
  async writeFiles(
    principal: OrgPrincipal,
    id: string,
    query: Record<string, string>,
    headers: Record<string, string>,
    body: Buffer,
  ): Promise<{ name: string; type: 'file'; path: string }[]> {
    const type = headers['content-type'] ?? 'application/octet-stream';
    const files: { path: string; content: Buffer }[] = [];
    if (type.startsWith('multipart/form-data')) {
      const form = await new Request('http://e2b.invalid/files', {
        method: 'POST',
        headers: { 'content-type': type },
        body,
      })
        .formData()
        .catch(() => {
          throw errors.invalidRequest('the multipart body cannot be read');
        });
      for (const value of form.getAll('file')) {
        if (typeof value === 'string') throw errors.invalidRequest('a file field holds text, not a file');
        const target = query.path ?? value.name;
        if (target === '') throw errors.invalidRequest('a file without a path: give ?path= or a filename');
        files.push({ path: target, content: Buffer.from(await value.arrayBuffer()) });
      }
    } else {
      if (query.path === undefined) throw errors.invalidRequest('path is required');
      const gzip = (headers['content-encoding'] ?? '').toLowerCase() === 'gzip';
      let content = body;
      if (gzip) {
        try {
          content = gunzipSync(body, { maxOutputLength: maxFileBytes + 1 });
        } catch {
          throw errors.invalidRequest(
            `the gzip body cannot be read, or holds more than ${maxFileBytes} bytes`,
          );
        }
      }
      files.push({ path: query.path, content });
    }
    if (files.length === 0) throw errors.invalidRequest('no file in the request');
    const written: { name: string; type: 'file'; path: string }[] = [];
    for (const file of files) {
      if (file.content.length > maxFileBytes) throw errors.payloadTooLarge(maxFileBytes);
      const path = envdPath(file.path);
      await this.#deps.operations.writeFile(principal, id, path, file.content);
      written.push({ name: posix.basename(path), type: 'file', path });
    }
    return written;
  }

  async #list(principal: OrgPrincipal, id: string, path: string, depth: number): Promise<unknown[]> {
    const items = await this.#deps.operations.listFiles(principal, id, path);
    const entries: unknown[] = [];
    for (const item of items) {
      entries.push(entryInfo(item));
      if (item.isDir && depth > 1) entries.push(...(await this.#list(principal, id, item.path, depth - 1)));
    }
    return entries;
  }

  async #stat(principal: OrgPrincipal, id: string, path: string): Promise<unknown> {
    if (path === '/')
      return entryInfo({ name: '/', path: '/', isDir: true, size: 0, modifiedAt: new Date(0).toISOString() });
    const parent = posix.dirname(path);
    const items = await this.#deps.operations.listFiles(principal, id, parent).catch((error: unknown) => {
      const { code } = connectErrorOf(error);
      if (code === 'not_found' || code === 'invalid_argument') return [];
      throw error;
    });
    const found = items.find((item) => item.name === posix.basename(path));
    if (found === undefined) throw new ConnectError('not_found', `no file or directory at ${path}`);
    return entryInfo({ ...found, path });
  }

  /** A small POSIX shell script run with `args` as $1...; named exit codes become Connect errors. */
  async #script(
    principal: OrgPrincipal,
    id: string,
    script: string,
    args: string[],
    exits: Record<number, [ConnectCode, string]>,
  ): Promise<void> {
    const result = await this.#deps.sandboxes.exec(principal, id, {
      args: ['/bin/sh', '-c', script, 'sh', ...args],
      timeoutSeconds: 20,
    });
    if (result.exitCode === 0) return;
    const named = exits[result.exitCode];
    if (named !== undefined) throw new ConnectError(named[0], named[1]);
    throw new ConnectError(
      'failed_precondition',
      result.stderr.trim().slice(0, 1000) || `exit code ${result.exitCode}`,
    );
  }
}

/** A Differently file entry as envd's EntryInfo (proto3 JSON: int64 as a string, enums by name). */
function entryInfo(item: FileInfo) {
  return {
    name: item.name,
    type: item.isDir ? 'FILE_TYPE_DIRECTORY' : 'FILE_TYPE_FILE',
    path: item.path,
    size: String(item.size),
    mode: 0,
    permissions: '',
    owner: '',
    group: '',
    modifiedTime: item.modifiedAt,
  };
}

const ptyRequestSchema = z.looseObject({
  size: z.looseObject({
    cols: z.int().check(z.gte(1), z.lte(1000)),
    rows: z.int().check(z.gte(1), z.lte(1000)),
  }),
});

const processConfigSchema = z.object({
  cmd: z.string(),
  args: z.array(z.string()),
  cwd: z.optional(z.string()),
  tag: z.optional(z.string()),
});

function parseConnect<T extends Parameters<typeof parseBody>[0]>(schema: T, value: unknown, what: string) {
  try {
    return parseBody(schema, value, what) as ReturnType<typeof parseBody<T>>;
  } catch (error) {
    throw new ConnectError('invalid_argument', (error as Error).message);
  }
}

/** A pty request's size; the SDK sends `{size: {cols, rows}}` (absent or null: no terminal). */
function ptySizeOf(pty: unknown): { cols: number; rows: number } | undefined {
  if (pty === undefined || pty === null) return undefined;
  const parsed = ptyRequestSchema.safeParse(pty);
  if (!parsed.success) throw new ConnectError('invalid_argument', 'pty: send {size: {cols, rows}}');
  return parsed.data.size;
}
