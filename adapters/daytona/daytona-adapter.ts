/**
 * Daytona (adapter specification section 9; ../shared/reference/providers/daytona.md). The main API
 * (sandboxes, snapshots, preview URLs) and the toolbox reached through each sandbox's toolbox proxy
 * (exec, files). Documented deviations: exec output is stdout and stderr combined; exec has no stdin.
 */

import { isIPv6 } from 'node:net';
import { unboundedCapacity } from '../../lib/adapter/capacity.ts';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import { ownershipLabelKeys } from '../../lib/adapter/ownership.ts';
import {
  type AdapterInfo,
  adapterProtocolVersion,
  type CallOptions,
  type Capabilities,
  type Capacity,
  type CreateRequest,
  type ExecEmit,
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type IdleKeeper,
  type IdleRequest,
  type Instance,
  type InstanceState,
  type Lifecycle,
  type Pauser,
  type PortExposer,
  type SnapshotInfo,
  type Snapshotter,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { isApiError } from '../../lib/errors.ts';
import { destinationsOf } from '../../lib/network/policy.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import * as z from '../../lib/zod.ts';
import { maxDownloadBytes, readBounded } from '../httpx/bounded-body.ts';
import { HttpClient } from '../httpx/http-client.ts';
import { shellQuote } from '../httpx/shell-quote.ts';
import { sleep } from '../httpx/sleep.ts';
import type { DaytonaConfig } from './config.ts';
import { DaytonaProcesses, type DaytonaToolbox } from './daytona-processes.ts';

const labels = ownershipLabelKeys;
/** The toolbox waits forever without a timeout; an unset one is sent as 600 s (the seeds' table). */
const defaultExecTimeoutSeconds = 600;

const sandboxSchema = z.object({
  id: z.string().check(z.minLength(1)),
  name: z.optional(z.string()),
  state: z.string(),
  errorReason: z.nullish(z.string()),
  labels: z.nullish(z.record(z.string(), z.string())),
  toolboxProxyUrl: z.nullish(z.string()),
});
type DaytonaSandbox = z.infer<typeof sandboxSchema>;
const listSchema = z.object({ items: z.array(sandboxSchema), nextCursor: z.nullish(z.string()) });
const executeSchema = z.object({ exitCode: z.int(), result: z.string() });
const filesSchema = z.array(
  z.object({
    name: z.string(),
    isDir: z.boolean(),
    size: z.optional(z.number()),
    modifiedAt: z.optional(z.string()),
  }),
);

const goneStates = new Set(['destroyed', 'destroying']);

export function daytonaStateOf(state: string): InstanceState {
  switch (state) {
    case 'started':
      return 'running';
    case 'stopped':
    case 'archived':
      return 'stopped';
    case 'paused':
      return 'paused';
    case 'error':
    case 'build_failed':
      return 'error';
    default:
      return 'pending';
  }
}

/** What the snapshot lookup needs of Daytona's SnapshotDto. */
const snapshotIdSchema = z.looseObject({ id: z.string().check(z.minLength(1)) });

export class DaytonaAdapter
  implements
    ExecutionAdapter,
    FileSystem,
    Lifecycle,
    Pauser,
    Snapshotter,
    PortExposer,
    IdleKeeper,
    ProcessHost
{
  readonly #config: DaytonaConfig;
  readonly #http: HttpClient;
  readonly #toolbox = new Map<string, string>();
  readonly #processes: DaytonaProcesses;

  constructor(config: DaytonaConfig, apiKey?: string, fetchImpl?: typeof fetch) {
    this.#config = config;
    this.#http = new HttpClient({
      provider: 'daytona',
      baseUrl: config.apiURL,
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
      secrets: apiKey === undefined ? [] : [apiKey],
      timeoutMs: 2 * 3600 * 1000 + 15 * 60 * 1000,
      ...(fetchImpl !== undefined && { fetch: fetchImpl }),
    });
    const toolbox: DaytonaToolbox = {
      json: async (ref, method, path, schema, options) =>
        this.#http.json(method, path, schema, { ...options, url: `${await this.#toolboxOf(ref)}${path}` }),
      send: async (ref, method, path, options) => {
        const response = await this.#http.request(method, path, {
          ...options,
          url: `${await this.#toolboxOf(ref)}${path}`,
        });
        await response.body?.cancel();
      },
      execute: async (ref, command, signal) =>
        (await this.exec(ref, { command, timeoutSeconds: 30 }, { signal })).exitCode,
      readFile: (ref, path, opts) => this.readFile(ref, path, opts),
      writeFile: (ref, path, content, opts) => this.writeFile(ref, path, content, opts),
    };
    this.#processes = new DaytonaProcesses(toolbox, config.pollIntervalMs);
  }

  // Interactive processes: one toolbox session each (./daytona-processes.ts).
  startProcess(ref: string, request: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo> {
    return this.#processes.start(ref, request, opts);
  }

  listProcesses(ref: string, opts?: CallOptions): Promise<ProcessInfo[]> {
    return this.#processes.list(ref, opts);
  }

  attachProcess(ref: string, pid: number, emit: ExecEmit, opts?: CallOptions): Promise<number | undefined> {
    return this.#processes.attach(ref, pid, emit, opts);
  }

  readProcessOutput(ref: string, pid: number, maxBytes: number, opts?: CallOptions): Promise<ProcessOutput> {
    return this.#processes.read(ref, pid, maxBytes, opts);
  }

  writeStdin(ref: string, pid: number, data: Uint8Array, opts?: CallOptions): Promise<void> {
    return this.#processes.write(ref, pid, data, opts);
  }

  closeStdin(ref: string, pid: number, opts?: CallOptions): Promise<void> {
    return this.#processes.closeStdin(ref, pid, opts);
  }

  resizeProcess(ref: string, pid: number, size: TerminalSize, opts?: CallOptions): Promise<void> {
    return this.#processes.resize(ref, pid, size, opts);
  }

  signalProcess(ref: string, pid: number, signal: ProcessSignal, opts?: CallOptions): Promise<void> {
    return this.#processes.signal(ref, pid, signal, opts);
  }

  info(): AdapterInfo {
    return {
      kind: 'daytona',
      version: '1',
      trust: 'external',
      isolation:
        this.#config.class === 'linux-vm'
          ? 'virtual machine (Daytona linux-vm class)'
          : 'container (Daytona container class)',
      protocol: adapterProtocolVersion,
      isolationVerified: false,
      description: 'exec returns stdout and stderr combined in stdout, and has no stdin',
      limitations: [
        'exec output is stdout and stderr combined; exec has no stdin (unsupported_operation): use an interactive process',
        "interactive processes (exec.stdin) run in Daytona's sessions: input is text delivered line by line (Daytona adds a newline to input that lacks one), output arrives line by line and is polled while attached, two readers at once may both receive the same output, unread output is never dropped and not bounded; no terminal (exec.pty): Daytona's PTY runs only the login shell, takes input over a WebSocket only, drops output while no client is connected and forgets its exit code when it ends",
        "resources are not sent: a sandbox gets its snapshot's size; quota and cost use the requested size",
        'no provider-side TTL: expiry relies on the sweep',
        "an idle policy that stops after whole minutes is kept by Daytona's auto-stop (autoStopInterval), which also counts preview traffic; any other is enforced by the control plane (autoStopInterval 0)",
        "listings are eventually consistent on Daytona's side; Create looks sandboxes up by name instead",
        ...(this.#config.class === 'container' ? ['no pause-resume for the container class'] : []),
        'snapshots capture the filesystem; fork is not offered',
        'egress per sandbox: deny (networkBlockAll), or an allow-list of at most 10 IPv4 addresses or CIDRs on every port (networkAllowList); no domains, IPv6 or ports, no allow-with-deny-list; on Daytona tiers 1-2 the org restricts the network and a sandbox cannot change it',
      ],
    };
  }

  #features(): string[] {
    const list = [
      'exec',
      'exec.stdin',
      'files',
      'lifecycle.stop-start',
      'persistence.disk',
      'snapshots.disk',
      'ports.expose',
      // Daytona's network limits: block-all, or an allow-list of IPv4 CIDRs (networkAllowList).
      'network.egress.deny',
      'network.egress.allowlist',
    ];
    if (this.#config.class === 'linux-vm') list.push('lifecycle.pause-resume', 'isolation.microvm');
    else list.push('isolation.container');
    return list;
  }

  async capabilities(): Promise<Capabilities> {
    return {
      features: this.#features(),
      maxCPU: 4,
      maxMemoryMiB: 8 * 1024,
      maxDiskGiB: 10,
      templates: [],
      regions: this.#config.target === undefined ? [] : [this.#config.target],
    };
  }

  async capacity(): Promise<Capacity> {
    return unboundedCapacity();
  }

  async health(opts?: CallOptions): Promise<void> {
    await this.#http.json('GET', '/sandbox', listSchema, {
      query: { limit: 1 },
      signal: opts?.signal,
      idempotent: true,
    });
  }

  /** The sandbox named by our id, looked up by name (consistent, unlike the listing). */
  async #byName(name: string, opts?: CallOptions): Promise<DaytonaSandbox | undefined> {
    try {
      const sandbox = await this.#getRaw(name, opts);
      return goneStates.has(sandbox.state) ? undefined : sandbox;
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  async create(req: CreateRequest, opts?: CallOptions): Promise<Instance> {
    let sandbox = await this.#byName(req.id, opts);
    if (sandbox === undefined) {
      try {
        sandbox = await this.#http.json('POST', '/sandbox', sandboxSchema, {
          json: this.createBody(req),
          signal: opts?.signal,
        });
      } catch (error) {
        // The name is the sandbox id: a conflict is our own earlier attempt, whose answer was lost.
        const existing =
          isApiError(error) && error.code === 'invalid_state' ? await this.#byName(req.id, opts) : undefined;
        if (existing === undefined) throw error;
        sandbox = existing;
      }
    }
    await this.#waitFor(sandbox.id, ['started'], opts);
    return { ref: sandbox.id, sandboxId: req.id, state: 'running' };
  }

  createBody(req: CreateRequest): Record<string, unknown> {
    const snapshot = req.fromSnapshot ?? req.template ?? this.#config.snapshot;
    return {
      name: req.id,
      ...(snapshot !== undefined && { snapshot }),
      env: req.env,
      labels: { [labels.sandboxId]: req.id, [labels.installation]: req.installation },
      ...(this.#config.target !== undefined && { target: this.#config.target }),
      // Daytona's auto-stop keeps the sandbox's idle policy when it has one in whole minutes (keepsIdle);
      // otherwise it is off (0) and Differently owns stop: it would stop a busy job with no traffic.
      autoStopInterval: req.idle === undefined ? 0 : req.idle.afterSeconds / 60,
      ...networkLimitsOf(req),
    };
  }

  async #getRaw(ref: string, opts?: CallOptions): Promise<DaytonaSandbox> {
    return this.#http.json('GET', `/sandbox/${encodeURIComponent(ref)}`, sandboxSchema, {
      signal: opts?.signal,
      idempotent: true,
    });
  }

  async #waitFor(ref: string, targets: string[], opts?: CallOptions): Promise<DaytonaSandbox> {
    const deadline = Date.now() + this.#config.readyTimeoutSeconds * 1000;
    for (;;) {
      const sandbox = await this.#getRaw(ref, opts);
      if (targets.includes(sandbox.state)) return sandbox;
      if (sandbox.state === 'error' || sandbox.state === 'build_failed') {
        throw adapterErrors.sandboxFailed(
          `daytona: sandbox ${ref} is ${sandbox.state}: ${sandbox.errorReason ?? 'no reason given'}`,
          { ref },
        );
      }
      if (goneStates.has(sandbox.state)) throw adapterErrors.notFound(ref);
      if (Date.now() > deadline) {
        throw adapterErrors.sandboxFailed(
          `daytona: sandbox ${ref} did not reach ${targets.join(' or ')} in ${this.#config.readyTimeoutSeconds} s (still ${sandbox.state})`,
        );
      }
      await sleep(this.#config.pollIntervalMs);
    }
  }

  async get(ref: string, opts?: CallOptions): Promise<Instance> {
    const sandbox = await this.#getRaw(ref, opts);
    if (goneStates.has(sandbox.state)) throw adapterErrors.notFound(ref);
    return this.#instanceOf(sandbox);
  }

  #instanceOf(sandbox: DaytonaSandbox): Instance {
    return {
      ref: sandbox.id,
      sandboxId: sandbox.labels?.[labels.sandboxId] ?? '',
      state: daytonaStateOf(sandbox.state),
      ...(sandbox.errorReason !== undefined &&
        sandbox.errorReason !== null && { message: sandbox.errorReason }),
    };
  }

  /** Cursor paging through the label filter; any failed page fails the whole list. */
  async list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    const found: Instance[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10_000; page++) {
      const result = await this.#http.json('GET', '/sandbox', listSchema, {
        query: { labels: JSON.stringify({ [labels.installation]: installation }), limit: 100, cursor },
        signal: opts?.signal,
        idempotent: true,
      });
      for (const sandbox of result.items) {
        if (sandbox.labels?.[labels.installation] === installation && !goneStates.has(sandbox.state))
          found.push(this.#instanceOf(sandbox));
      }
      if (result.nextCursor === undefined || result.nextCursor === null) return found;
      cursor = result.nextCursor;
    }
    throw this.#http.unavailable('the sandbox list did not end after 10000 pages');
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    this.#toolbox.delete(ref);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#http.request('DELETE', `/sandbox/${encodeURIComponent(ref)}`, {
          signal: opts?.signal,
          idempotent: true,
          accept: [404],
        });
        return;
      } catch (error) {
        // 409: a state change is in flight. If it is the destroy itself, the delete is already done.
        if (!(isApiError(error) && error.code === 'invalid_state') || attempt >= 10) throw error;
        if ((await this.#byName(ref, opts)) === undefined) return;
        await sleep(this.#config.pollIntervalMs);
      }
    }
  }

  async #toolboxOf(ref: string, opts?: CallOptions): Promise<string> {
    const known = this.#toolbox.get(ref);
    if (known !== undefined) return known;
    const sandbox = await this.#getRaw(ref, opts);
    if (sandbox.toolboxProxyUrl === undefined || sandbox.toolboxProxyUrl === null) {
      throw this.#http.unavailable(`sandbox ${ref} has no toolboxProxyUrl`);
    }
    const base = `${sandbox.toolboxProxyUrl.replace(/\/+$/, '')}/${encodeURIComponent(ref)}`;
    this.#toolbox.set(ref, base);
    return base;
  }

  async exec(ref: string, req: ExecRequest, opts?: CallOptions): Promise<ExecResult> {
    if (req.stdin !== undefined) {
      throw adapterErrors.unsupported('exec with stdin', {
        adapter: 'daytona',
        reason: 'the toolbox feeds the command itself through stdin',
      });
    }
    const base = await this.#toolboxOf(ref, opts);
    const started = Date.now();
    const timeout = req.timeoutSeconds ?? defaultExecTimeoutSeconds;
    try {
      const result = await this.#http.json('POST', '/process/execute', executeSchema, {
        url: `${base}/process/execute`,
        json: {
          command: req.command ?? shellQuote(req.args ?? []),
          ...(req.cwd !== undefined && { cwd: req.cwd }),
          ...(req.env !== undefined && { envs: req.env }),
          timeout,
        },
        signal: opts?.signal,
      });
      // -1: the process could not be spawned; the result holds the reason.
      if (result.exitCode === -1) {
        return {
          exitCode: 127,
          stdout: '',
          stderr: result.result,
          durationMs: Date.now() - started,
          truncated: false,
          timedOut: false,
        };
      }
      return {
        exitCode: result.exitCode,
        stdout: result.result,
        stderr: '',
        durationMs: Date.now() - started,
        truncated: false,
        timedOut: false,
      };
    } catch (error) {
      // 408: the toolbox killed the command at its timeout; the output is lost with it.
      if (isApiError(error) && error.details.status === 408) {
        return {
          exitCode: 124,
          stdout: '',
          stderr: '',
          durationMs: Date.now() - started,
          truncated: false,
          timedOut: true,
        };
      }
      throw error;
    }
  }

  async #toolboxCall(
    ref: string,
    method: string,
    path: string,
    init: { query?: Record<string, string>; raw?: FormData; signal?: AbortSignal | undefined },
  ) {
    const base = await this.#toolboxOf(ref, { ...(init.signal && { signal: init.signal }) });
    try {
      return await this.#http.request(method, path, {
        ...init,
        url: this.#http.url(path, init.query ?? {}, base),
      });
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found' && init.query?.path !== undefined)
        throw adapterErrors.fileNotFound(init.query.path);
      throw error;
    }
  }

  async readFile(ref: string, path: string, opts?: CallOptions): Promise<Uint8Array> {
    const response = await this.#toolboxCall(ref, 'GET', '/files/download', {
      query: { path },
      signal: opts?.signal,
    });
    return new Uint8Array(await readBounded(response, maxDownloadBytes, 'a file download'));
  }

  async writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(content)]), path.split('/').pop() || 'file');
    // The daemon's current upload (the published toolbox client's uploadFile); /files/upload is gone.
    await this.#toolboxCall(ref, 'POST', '/files/upload-v2', {
      query: { path },
      raw: form,
      signal: opts?.signal,
    });
  }

  async listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]> {
    const response = await this.#toolboxCall(ref, 'GET', '/files', { query: { path }, signal: opts?.signal });
    const entries = await this.#http.parse(response, filesSchema, 'GET /files');
    return entries.map((e) => ({
      name: e.name,
      path: `${path.replace(/\/$/, '')}/${e.name}`,
      isDir: e.isDir,
      size: e.size ?? 0,
      ...(e.modifiedAt !== undefined && { modifiedAt: e.modifiedAt }),
    }));
  }

  /** Lifecycle calls are made idempotent: Daytona answers 400 to a start of a started sandbox. */
  async #lifecycle(
    ref: string,
    action: 'start' | 'stop' | 'pause',
    settled: string,
    opts?: CallOptions,
  ): Promise<void> {
    const current = await this.#getRaw(ref, opts);
    if (current.state === settled) return;
    await this.#http.request('POST', `/sandbox/${encodeURIComponent(ref)}/${action}`, {
      signal: opts?.signal,
    });
    this.#toolbox.delete(ref);
    await this.#waitFor(ref, [settled], opts);
  }

  /** Daytona's auto-stop stops (never pauses), counting in whole minutes. */
  keepsIdle(idle: IdleRequest): boolean {
    return idle.action === 'stop' && idle.afterSeconds % 60 === 0;
  }

  /** Resets the auto-stop timer, which counts API and toolbox calls, not the processes a command runs. */
  async markActive(ref: string, opts?: CallOptions): Promise<void> {
    // Answered 201 (NestJS's default for a POST), where the spec says 200: any 2xx is success.
    await this.#http.request('POST', `/sandbox/${encodeURIComponent(ref)}/last-activity`, {
      signal: opts?.signal,
    });
  }

  stop(ref: string, opts?: CallOptions): Promise<void> {
    return this.#lifecycle(ref, 'stop', 'stopped', opts);
  }

  start(ref: string, opts?: CallOptions): Promise<void> {
    return this.#lifecycle(ref, 'start', 'started', opts);
  }

  async pause(ref: string, opts?: CallOptions): Promise<void> {
    if (this.#config.class !== 'linux-vm')
      throw adapterErrors.unsupported('pause', { class: this.#config.class });
    await this.#lifecycle(ref, 'pause', 'paused', opts);
  }

  /** Daytona resumes a paused sandbox with start. */
  async resume(ref: string, opts?: CallOptions): Promise<void> {
    if (this.#config.class !== 'linux-vm')
      throw adapterErrors.unsupported('resume', { class: this.#config.class });
    await this.#lifecycle(ref, 'start', 'started', opts);
  }

  async snapshot(ref: string, kind: 'disk' | 'memory', opts?: CallOptions): Promise<SnapshotInfo> {
    if (kind === 'memory')
      throw adapterErrors.unsupported('snapshot', {
        kind,
        reason: 'Daytona captures memory for Windows sandboxes only',
      });
    const before = await this.#getRaw(ref, opts);
    const name = `dly-${ref}-${Date.now().toString(36)}`.toLowerCase();
    await this.#http.request('POST', `/sandbox/${encodeURIComponent(ref)}/snapshot`, {
      json: { name },
      signal: opts?.signal,
    });
    // The sandbox is `snapshotting` until the snapshot is usable, then back where it was.
    await this.#waitFor(ref, [before.state], opts);
    return { ref: name, kind: 'disk', sizeBytes: 0 };
  }

  /**
   * Daytona deletes a snapshot by its id only (a name answers 404, which would pass for "already gone" and
   * leave it counted against the provider's quota): the name this adapter gave it is looked up first
   * (`GET /snapshots/{idOrName}`), as Daytona's own SDK does. One that is not found is gone.
   */
  async deleteSnapshot(snapshotRef: string, opts?: CallOptions): Promise<void> {
    const found = await this.#http.request('GET', `/snapshots/${encodeURIComponent(snapshotRef)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
    if (found.status === 404) {
      await found.body?.cancel();
      return;
    }
    const { id } = await this.#http.parse(found, snapshotIdSchema, `GET /snapshots/${snapshotRef}`);
    await this.#http.request('DELETE', `/snapshots/${encodeURIComponent(id)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
  }

  async exposePort(ref: string, port: number, opts?: CallOptions): Promise<string> {
    const preview = await this.#http.json(
      'GET',
      `/sandbox/${encodeURIComponent(ref)}/ports/${port}/signed-preview-url`,
      z.object({ url: z.string().check(z.minLength(1)) }),
      { query: { expiresInSeconds: this.#config.portURLSeconds }, signal: opts?.signal, idempotent: true },
    );
    return preview.url;
  }
}

/** The most CIDR blocks Daytona's networkAllowList takes. */
const maxDaytonaAllowList = 10;

/**
 * Daytona's network limits for a sandbox's egress policy: deny is networkBlockAll; an allow-list of IPv4
 * addresses and ranges is networkAllowList (an address as its /32). Placement sent only what the pool
 * declares (no domains, no ports); what Daytona still cannot take (IPv6, more than 10) is refused here.
 */
function networkLimitsOf(req: CreateRequest): { networkBlockAll?: true; networkAllowList?: string } {
  if (req.network === undefined) return {};
  if (req.network.egress === 'deny') return { networkBlockAll: true };
  if (req.network.egress === 'allow')
    throw adapterErrors.unsupported('egress allow with an installation deny-list', {
      reason: "Daytona's network limits take an allow-list only",
    });
  const blocks = destinationsOf(req.network.allow).map((destination) => {
    if (destination.kind === 'domain' || isIPv6(destination.host))
      throw adapterErrors.unsupported(`the egress destination ${destination.host} on Daytona`, {
        reason: 'networkAllowList takes IPv4 addresses and CIDR blocks only',
      });
    return destination.kind === 'cidr'
      ? `${destination.host}/${destination.prefix}`
      : `${destination.host}/32`;
  });
  if (blocks.length > maxDaytonaAllowList)
    throw adapterErrors.unsupported(`an allow-list of ${blocks.length} entries on Daytona`, {
      reason: `networkAllowList takes at most ${maxDaytonaAllowList}`,
    });
  return { networkAllowList: blocks.join(',') };
}
