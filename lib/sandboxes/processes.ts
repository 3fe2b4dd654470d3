import type { Feature } from '../adapter/features.ts';
import {
  isProcessHost,
  type ProcessHost,
  type ProcessSignal,
  type TerminalSize,
} from '../adapter/processes.ts';
import { errors, toErrorResponse } from '../errors.ts';
import { describeError } from '../log.ts';
import type { ExecStreamLine } from '../schemas/exec-stream-lines.ts';
import type { ProcessView, StartProcessRequest, StdinRequest } from '../schemas/processes.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { OrgPrincipal } from '../tenancy/auth.ts';
import { commandEnv } from './command-env.ts';
import { maxStreamSeconds } from './exec-stream.ts';
import { requireRunAsOffered } from './run-as.ts';
import type { SandboxService, SandboxServiceDeps } from './service.ts';
import { requireRunning } from './status-guards.ts';

/** A process lives at most this long unless asked otherwise (the backend's own maximum applies too). */
export const defaultProcessTimeoutSeconds = 3600;

/** One line of an attach: the process first, then the exec stream's lines, or `detached` at the stream's end. */
export type AttachLine = ExecStreamLine | { process: ProcessView } | { detached: { reason: string } };

/**
 * Interactive processes (lib/adapter/processes.ts) for tenants: every call is a short request naming the
 * sandbox and the pid, answered by whichever container gets it, because the process lives in the backend.
 * An attach is a stream of the streaming function, 14 minutes at most (API Gateway's 15); the client
 * attaches again after, losing nothing (output waits unread in the backend, bounded).
 */
export class SandboxProcesses {
  readonly #deps: SandboxServiceDeps;
  readonly #sandboxes: SandboxService;

  constructor(deps: SandboxServiceDeps, sandboxes: SandboxService) {
    this.#deps = deps;
    this.#sandboxes = sandboxes;
  }

  async start(principal: OrgPrincipal, id: string, request: StartProcessRequest): Promise<ProcessView> {
    const { record, host } = await this.#startHost(principal, id, request);
    return this.#start(record, host, request);
  }

  #startHost(principal: OrgPrincipal, id: string, request: StartProcessRequest) {
    return this.#host(
      principal,
      id,
      request.pty === undefined ? 'exec.stdin' : 'exec.pty',
      request.pty === undefined ? 'an interactive process (stdin after start)' : 'a terminal (pty)',
    );
  }

  async #start(
    record: SandboxRecord & { pool: string; backendRef: string },
    host: ProcessHost,
    request: StartProcessRequest,
  ): Promise<ProcessView> {
    const id = record.id;
    requireRunAsOffered(this.#deps, record, request.user);
    const started = await host.startProcess(record.backendRef, {
      argv: request.command !== undefined ? [request.command] : (request.args ?? []),
      shell: request.command !== undefined,
      env: commandEnv(record, request.env) ?? {},
      ...(request.cwd !== undefined && { cwd: request.cwd }),
      ...(request.pty !== undefined && { pty: request.pty }),
      ...(request.tag !== undefined && { tag: request.tag }),
      ...(request.user !== undefined && { user: request.user }),
      timeoutSeconds: request.timeoutSeconds ?? defaultProcessTimeoutSeconds,
    });
    if (request.stdin === false && request.pty === undefined) {
      await host.closeStdin(record.backendRef, started.pid).catch(() => undefined);
      started.stdinOpen = false;
    }
    await this.#touch(record);
    this.#deps.log.info('process started', { sandboxId: id, pid: started.pid, pty: started.pty !== null });
    return started;
  }

  /**
   * Starts a process and attaches to it at once (E2B's process.Start): one load of the sandbox, and the
   * output from the first byte (it waits unread in the backend until the attach takes it).
   */
  async startAttached(
    principal: OrgPrincipal,
    id: string,
    request: StartProcessRequest,
    cancelled?: AbortSignal,
  ): Promise<{
    process: ProcessView;
    produce: (send: (line: AttachLine) => void | Promise<void>) => Promise<void>;
  }> {
    const { record, host } = await this.#startHost(principal, id, request);
    const process = await this.#start(record, host, request);
    return { process, produce: this.#attached(record, host, process, cancelled, maxStreamSeconds) };
  }

  async list(principal: OrgPrincipal, id: string): Promise<ProcessView[]> {
    const { record, host } = await this.#host(principal, id, 'exec.stdin', 'interactive processes');
    return host.listProcesses(record.backendRef);
  }

  async get(principal: OrgPrincipal, id: string, pid: number): Promise<ProcessView> {
    const found = (await this.list(principal, id)).find((process) => process.pid === pid);
    if (found === undefined) throw errors.notFound('process', String(pid));
    return found;
  }

  /** Input: never logged or audited (a password typed into a terminal is input too). */
  async stdin(principal: OrgPrincipal, id: string, pid: number, request: StdinRequest): Promise<void> {
    const { record, host } = await this.#host(principal, id, 'exec.stdin', 'interactive processes');
    const data =
      request.dataBase64 !== undefined
        ? Buffer.from(request.dataBase64, 'base64')
        : request.data !== undefined
          ? Buffer.from(request.data, 'utf8')
          : undefined;
    if (data !== undefined && data.length > 0) await host.writeStdin(record.backendRef, pid, data);
    if (request.close === true) await host.closeStdin(record.backendRef, pid);
    await this.#touch(record);
  }

  async resize(principal: OrgPrincipal, id: string, pid: number, size: TerminalSize): Promise<void> {
    const { record, host } = await this.#host(principal, id, 'exec.pty', 'a terminal (pty)');
    await host.resizeProcess(record.backendRef, pid, size);
  }

  async signal(principal: OrgPrincipal, id: string, pid: number, signal: ProcessSignal): Promise<void> {
    const { record, host } = await this.#host(principal, id, 'exec.stdin', 'interactive processes');
    await host.signalProcess(record.backendRef, pid, signal);
    await this.#touch(record);
  }

  /** What it printed since the last attach or read, without waiting (MCP's read, a polling client). */
  async output(principal: OrgPrincipal, id: string, pid: number, maxBytes: number) {
    const { record, host } = await this.#host(principal, id, 'exec.stdin', 'interactive processes');
    const output = await host.readProcessOutput(record.backendRef, pid, maxBytes);
    const text = (stream: 'stdout' | 'stderr') =>
      output.events
        .filter((event) => event.stream === stream)
        .map((event) => event.data)
        .join('');
    return { stdout: text('stdout'), stderr: text('stderr'), exitCode: output.exitCode };
  }

  /**
   * An attach's lines: the process, its unread output and what it prints, then `{exitCode}` when it ends,
   * `{detached}` when the stream's time is up (attach again), or `{error}`. Checks happen before the first
   * line so a refusal is still a proper HTTP error.
   */
  async attach(
    principal: OrgPrincipal,
    id: string,
    pid: number,
    cancelled?: AbortSignal,
    /** Stream time (tests use less); at most maxStreamSeconds. */
    forSeconds: number = maxStreamSeconds,
  ): Promise<(send: (line: AttachLine) => void | Promise<void>) => Promise<void>> {
    const { record, host } = await this.#host(principal, id, 'exec.stdin', 'interactive processes');
    const view = (await host.listProcesses(record.backendRef)).find((process) => process.pid === pid);
    if (view === undefined) throw errors.notFound('process', String(pid));
    return this.#attached(record, host, view, cancelled, forSeconds);
  }

  #attached(
    record: SandboxRecord & { pool: string; backendRef: string },
    host: ProcessHost,
    view: ProcessView,
    cancelled: AbortSignal | undefined,
    forSeconds: number,
  ): (send: (line: AttachLine) => void | Promise<void>) => Promise<void> {
    const { id } = record;
    const { pid } = view;
    return async (send) => {
      const timeUp = AbortSignal.timeout(Math.min(forSeconds, maxStreamSeconds) * 1000);
      const signal = cancelled === undefined ? timeUp : AbortSignal.any([timeUp, cancelled]);
      // Attached, the sandbox is in use (its idle policy waits).
      const stillActive = this.#sandboxes.keepActive(record);
      try {
        await send({ process: view });
        const exitCode = await host.attachProcess(record.backendRef, pid, (event) => send(event), { signal });
        if (exitCode !== undefined) await send({ exitCode });
        else if (cancelled?.aborted !== true)
          await send({ detached: { reason: 'the stream reached its time limit: attach again' } });
      } catch (error) {
        const { body, masked } = toErrorResponse(error);
        if (masked)
          this.#deps.log.error('process attach failed', { sandboxId: id, error: describeError(error) });
        await send({ error: { code: body.error.code, message: body.error.message } });
      } finally {
        await stillActive();
      }
    };
  }

  async #host(
    principal: OrgPrincipal,
    id: string,
    feature: Feature,
    what: string,
  ): Promise<{ record: SandboxRecord & { pool: string; backendRef: string }; host: ProcessHost }> {
    const record = requireRunning(await this.#sandboxes.loadForUse(principal, id));
    const adapter = this.#deps.pools.adapterOf(record.pool);
    if (!this.#deps.pools.featuresOf(record.pool).includes(feature) || !isProcessHost(adapter))
      throw errors.unsupportedOperation(what, {
        pool: record.pool,
        adapter: adapter.info().kind,
        feature,
        reason: `pool ${record.pool} does not offer ${feature}: create the sandbox with capabilities ["${feature}"] to be placed where it is`,
      });
    return { record, host: adapter };
  }

  /** Input and signals are use: an idle policy counts them as activity. */
  async #touch(record: SandboxRecord): Promise<void> {
    if (record.idle === null) return;
    await this.#sandboxes.keepActive(record)();
  }
}
