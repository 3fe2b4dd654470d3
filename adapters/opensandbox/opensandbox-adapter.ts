/**
 * OpenSandbox, the default private runtime (adapter specification section 9; storage seed sections 3-10;
 * ../shared/reference/providers/opensandbox.md). Three HTTP surfaces: the lifecycle server (create,
 * list, pause, snapshots, endpoints), execd inside each sandbox (exec, files), reached through an
 * endpoint the lifecycle server resolves, and the egress sidecar (set at create only).
 */

import { randomBytes } from 'node:crypto';
import { unboundedCapacity } from '../../lib/adapter/capacity.ts';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import {
  type AdapterInfo,
  adapterProtocolVersion,
  type CallOptions,
  type Capabilities,
  type Capacity,
  type CreateRequest,
  type ExecEmit,
  type ExecEvent,
  type ExecOptions,
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type Instance,
  type Lifecycle,
  type Pauser,
  type PortExposer,
  type SnapshotInfo,
  type Snapshotter,
  type Streamer,
  type TtlExtender,
} from '../../lib/adapter/port.ts';
import { ApiError, errors, isApiError } from '../../lib/errors.ts';
import { cutUtf8 } from '../../lib/sandboxes/exec-output.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import * as z from '../../lib/zod.ts';
import { HttpClient } from '../httpx/http-client.ts';
import { linesOf } from '../httpx/lines.ts';
import { shellQuote } from '../httpx/shell-quote.ts';
import { sleep } from '../httpx/sleep.ts';
import type { OpenSandboxConfig } from './config.ts';
import { ExecdEvents } from './execd-events.ts';
import { networkPolicyOf } from './network-policy.ts';
import {
  endpointSchema,
  fileListSchema,
  gone,
  instanceStateOf,
  listSchema,
  type OpenSandbox,
  sandboxSchema,
  snapshotSchema,
} from './wire.ts';

const execdPort = 44772;
const metadataKeys = { sandboxId: 'differently-sandbox-id', installation: 'differently-installation' };
/** Synchronous output kept per stream; more is dropped and reported as truncated (fixes E0.35). */
const maxSyncOutputBytes = 8 * 1024 * 1024;
/** File reads stop here and say so rather than returning a silently cut file (fixes E0.35). */
const maxReadBytes = 100 * 1024 * 1024;

interface Execd {
  base: string;
  headers: Record<string, string>;
}

export class OpenSandboxAdapter
  implements ExecutionAdapter, Streamer, FileSystem, Lifecycle, Pauser, Snapshotter, PortExposer, TtlExtender
{
  readonly #config: OpenSandboxConfig;
  readonly #http: HttpClient;
  readonly #declared: string[] | undefined;
  readonly #endpoints = new Map<string, Execd>();

  /** `declared`: the pool's own features list, which may enable snapshots.memory. */
  constructor(config: OpenSandboxConfig, apiKey?: string, declared?: string[], fetchImpl?: typeof fetch) {
    this.#config = config;
    this.#declared = declared;
    this.#http = new HttpClient({
      provider: 'opensandbox',
      baseUrl: `${config.apiURL.replace(/\/+$/, '')}/v1`,
      headers: apiKey === undefined ? {} : { 'OPEN-SANDBOX-API-KEY': apiKey },
      secrets: apiKey === undefined ? [] : [apiKey],
      timeoutMs: 2 * 3600 * 1000 + 15 * 60 * 1000,
      ...(fetchImpl !== undefined && { fetch: fetchImpl }),
    });
  }

  info(): AdapterInfo {
    const c = this.#config;
    return {
      kind: 'opensandbox',
      version: '1',
      trust: 'private',
      isolation:
        c.isolation === 'microvm'
          ? 'microVM (Fast Sandbox), as declared by the operator'
          : `container (${c.runtime} runtime), as declared by the operator`,
      protocol: adapterProtocolVersion,
      isolationVerified: false,
      limitations: [
        'reports no capacity: the pool is unbounded unless maxConcurrency is set, so overflow to other pools never triggers while it is healthy',
        c.runtime === 'kubernetes'
          ? 'diskGiB is sent as ephemeral-storage; quota and cost use the requested size'
          : 'diskGiB is not sent (the Docker runtime has no disk limit); quota and cost use the requested size',
        ...(c.templateId !== undefined ? [`offers only template ${c.templateId} (extensions.poolRef)`] : []),
        c.runtime === 'kubernetes'
          ? 'stop is a filesystem checkpoint (pause on Kubernetes): processes and memory do not survive it; no pause-resume'
          : 'no stop-start on the Docker runtime; pause keeps memory',
        'snapshots capture the filesystem only',
        ...(c.egress === 'open' ? ['no egress control configured: sandboxes reach the network freely'] : []),
        ...(c.egress === 'per-sandbox'
          ? [
              'egress per sandbox: deny, or an allow-list of domains on every port (the sidecar filters DNS names); no address or CIDR entries, no ports, no allow-with-deny-list',
            ]
          : []),
        'execd is reached through the endpoint the server resolves: protect that network path',
      ],
    };
  }

  #features(): string[] {
    const c = this.#config;
    const list = ['exec', 'exec.stream', 'files', 'snapshots.disk', 'fork', `isolation.${c.isolation}`];
    if (c.runtime === 'docker') list.push('lifecycle.pause-resume');
    else list.push('lifecycle.stop-start', 'persistence.disk');
    if (c.ports === 'signed') list.push('ports.expose');
    // The sidecar filters by DNS name (its dns mode): a deny, or an allow-list of domains on every port.
    if (c.egress === 'per-sandbox') list.push('network.egress.deny', 'network.egress.domains');
    else if (c.egress !== 'open') list.push('network.egress-control');
    for (const extra of [...c.features, ...(this.#declared ?? [])])
      if (!list.includes(extra)) list.push(extra);
    return list;
  }

  async capabilities(): Promise<Capabilities> {
    return {
      features: this.#features(),
      maxCPU: 0,
      maxMemoryMiB: 0,
      maxDiskGiB: 0,
      templates: this.#config.templateId === undefined ? [] : [this.#config.templateId],
      regions: [],
    };
  }

  /** OpenSandbox reports no capacity. */
  async capacity(): Promise<Capacity> {
    return unboundedCapacity();
  }

  async health(opts?: CallOptions): Promise<void> {
    await this.#http.json('GET', '/sandboxes', listSchema, {
      query: { page: 1, pageSize: 1 },
      signal: opts?.signal,
      idempotent: true,
    });
  }

  async create(req: CreateRequest, opts?: CallOptions): Promise<Instance> {
    // Idempotent: a sandbox already created for this id (by an earlier attempt whose answer was lost) is reused.
    const existing = (
      await this.#listBy(
        { [metadataKeys.sandboxId]: req.id, [metadataKeys.installation]: req.installation },
        opts,
      )
    ).find((s) => s.status.state !== 'Failed');
    const id = existing?.id ?? (await this.#createSandbox(req, opts));
    await this.#waitReady(id, opts);
    return { ref: id, sandboxId: req.id, state: 'running' };
  }

  /** The create body (exported shape checked against the published spec in tests). */
  createBody(req: CreateRequest): Record<string, unknown> {
    const c = this.#config;
    const resourceLimits: Record<string, string> = {
      cpu: String(Math.max(1, req.resources.cpu)),
      memory: `${Math.max(128, req.resources.memoryMiB)}Mi`,
      ...(c.runtime === 'kubernetes' && { 'ephemeral-storage': `${req.resources.diskGiB}Gi` }),
    };
    const source =
      req.fromSnapshot !== undefined
        ? { snapshotId: req.fromSnapshot }
        : c.templateId !== undefined
          ? { extensions: { poolRef: c.templateId } }
          : { image: { uri: req.template ?? c.image }, entrypoint: ['tail', '-f', '/dev/null'] };
    return {
      ...source,
      resourceLimits,
      env: req.env,
      metadata: {
        [metadataKeys.sandboxId]: req.id,
        [metadataKeys.installation]: req.installation,
        name: req.id,
      },
      // The provider-side backstop: at least OpenSandbox's minimum of 60 s.
      timeout: Math.max(60, req.ttlSeconds ?? 3600),
      ...networkPolicyOf(c, req),
      ...(c.ports === 'signed' && c.runtime === 'kubernetes' && { secureAccess: true }),
    };
  }

  async #createSandbox(req: CreateRequest, opts?: CallOptions): Promise<string> {
    try {
      const created = await this.#http.json(
        'POST',
        '/sandboxes',
        z.object({ id: z.string().check(z.minLength(1)) }),
        {
          json: this.createBody(req),
          signal: opts?.signal,
        },
      );
      return created.id;
    } catch (error) {
      // Kubernetes waited for the pod and gave up: the server has already deleted the workload.
      if (isApiError(error) && error.details.status === 504) {
        throw adapterErrors.sandboxFailed(
          `opensandbox: the pod never became ready (${String(error.details.providerCode ?? 'timeout')})`,
          {
            providerCode: error.details.providerCode,
          },
        );
      }
      throw error;
    }
  }

  /** Polls until Running, then pings execd until it answers; bounded by the caller and readyTimeoutSeconds. */
  async #waitReady(id: string, opts?: CallOptions): Promise<void> {
    // Whichever ends first: the pool's readiness allowance, or the caller's deadline (the scheduler's).
    const deadline = Math.min(
      Date.now() + this.#config.readyTimeoutSeconds * 1000,
      opts?.deadline ?? Number.POSITIVE_INFINITY,
    );
    try {
      await this.#pollReady(id, deadline, opts);
    } catch (error) {
      // The caller gave up: a sandbox still starting is this sandbox's failure, never the pool's.
      if (opts?.signal?.aborted === true || (error as Error).name === 'AbortError')
        throw adapterErrors.sandboxFailed(
          `opensandbox: sandbox ${id} was not ready when the caller gave up`,
          {
            ref: id,
          },
        );
      throw error;
    }
  }

  async #pollReady(id: string, deadline: number, opts?: CallOptions): Promise<void> {
    for (;;) {
      const sandbox = await this.#getRaw(id, opts);
      const state = sandbox.status.state;
      if (state === 'Running') break;
      if (state === 'Failed' || state === 'Terminated' || state === 'Stopping') {
        const why = [sandbox.status.reason, sandbox.status.message].filter(Boolean).join(': ') || state;
        await this.delete(id).catch(() => undefined);
        // An image that cannot be pulled can never start: not worth a retry elsewhere.
        if (/pull|image|not found|manifest/i.test(why))
          throw adapterErrors.invalidRequest(`opensandbox: ${why}`, { ref: id });
        throw adapterErrors.sandboxFailed(`opensandbox: sandbox ${id} ${state.toLowerCase()}: ${why}`, {
          ref: id,
        });
      }
      this.#checkDeadline(deadline, opts, `sandbox ${id} is still ${state}`);
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
    for (;;) {
      try {
        const execd = await this.#execdOf(id, opts, true);
        const ping = await this.#http.request('GET', '/ping', {
          url: `${execd.base}/ping`,
          headers: execd.headers,
          signal: opts?.signal,
        });
        await ping.body?.cancel();
        return;
      } catch (error) {
        this.#checkDeadline(
          deadline,
          opts,
          `execd in sandbox ${id} does not answer (${(error as Error).message})`,
        );
        await sleep(200, opts?.signal);
      }
    }
  }

  #checkDeadline(deadline: number, opts: CallOptions | undefined, what: string): void {
    if (opts?.signal?.aborted === true)
      throw adapterErrors.sandboxFailed(`opensandbox: the caller gave up while ${what}`);
    if (Date.now() > deadline) throw adapterErrors.sandboxFailed(`opensandbox: not ready in time: ${what}`);
  }

  async #getRaw(id: string, opts?: CallOptions): Promise<OpenSandbox> {
    return this.#http.json('GET', `/sandboxes/${encodeURIComponent(id)}`, sandboxSchema, {
      signal: opts?.signal,
      idempotent: true,
    });
  }

  async get(ref: string, opts?: CallOptions): Promise<Instance> {
    const sandbox = await this.#getRaw(ref, opts);
    if (gone(sandbox.status.state)) throw adapterErrors.notFound(ref);
    return this.#instanceOf(sandbox);
  }

  #instanceOf(sandbox: OpenSandbox): Instance {
    return {
      ref: sandbox.id,
      sandboxId: sandbox.metadata?.[metadataKeys.sandboxId] ?? '',
      state: instanceStateOf(sandbox.status.state, this.#config.runtime),
      ...(sandbox.status.message !== undefined && { message: sandbox.status.message }),
    };
  }

  /** Every page, or an error: never a partial list. The metadata filter is re-checked locally. */
  async #listBy(filter: Record<string, string>, opts?: CallOptions): Promise<OpenSandbox[]> {
    const found: OpenSandbox[] = [];
    const metadata = new URLSearchParams(filter).toString();
    for (let page = 1; page <= 10_000; page++) {
      const result = await this.#http.json('GET', '/sandboxes', listSchema, {
        query: { metadata, page, pageSize: 100 },
        signal: opts?.signal,
        idempotent: true,
      });
      for (const sandbox of result.items) {
        const matches = Object.entries(filter).every(([key, value]) => sandbox.metadata?.[key] === value);
        if (matches && !gone(sandbox.status.state)) found.push(sandbox);
      }
      if (!result.pagination.hasNextPage) return found;
    }
    throw this.#http.unavailable('the sandbox list did not end after 10000 pages');
  }

  async list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    return (await this.#listBy({ [metadataKeys.installation]: installation }, opts)).map((s) =>
      this.#instanceOf(s),
    );
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    this.#endpoints.delete(ref);
    await this.#http.request('DELETE', `/sandboxes/${encodeURIComponent(ref)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
  }

  /** execd's base URL and the headers it needs; re-resolved after resume (the endpoint may move). */
  async #execdOf(ref: string, opts?: CallOptions, fresh = false): Promise<Execd> {
    const known = this.#endpoints.get(ref);
    if (known !== undefined && !fresh) return known;
    const endpoint = await this.#http.json(
      'GET',
      `/sandboxes/${encodeURIComponent(ref)}/endpoints/${execdPort}`,
      endpointSchema,
      {
        query: this.#config.useServerProxy ? { use_server_proxy: true } : {},
        signal: opts?.signal,
        idempotent: true,
      },
    );
    const base = /^https?:\/\//.test(endpoint.endpoint) ? endpoint.endpoint : `http://${endpoint.endpoint}`;
    const execd = { base: base.replace(/\/+$/, ''), headers: endpoint.headers ?? {} };
    this.#endpoints.set(ref, execd);
    return execd;
  }

  async #execd(
    ref: string,
    method: string,
    path: string,
    init: {
      json?: unknown;
      raw?: FormData;
      query?: Record<string, string>;
      signal?: AbortSignal | undefined;
      accept?: number[];
    } = {},
  ) {
    const execd = await this.#execdOf(ref, { ...(init.signal && { signal: init.signal }) });
    const url = this.#http.url(path, init.query ?? {}, execd.base);
    try {
      return await this.#http.request(method, path, { ...init, url, headers: execd.headers });
    } catch (error) {
      // A file execd cannot find is the caller's not_found, named by its path.
      if (isApiError(error) && error.code === 'not_found' && init.query?.path !== undefined)
        throw adapterErrors.fileNotFound(init.query.path);
      throw error;
    }
  }

  async exec(ref: string, req: ExecRequest, opts?: ExecOptions): Promise<ExecResult> {
    const out = { stdout: '', stderr: '', truncated: false };
    const size = { stdout: 0, stderr: 0 };
    const cap = Math.min(maxSyncOutputBytes, opts?.maxOutputBytes ?? maxSyncOutputBytes);
    const started = Date.now();
    const append = (stream: 'stdout' | 'stderr', data: string) => {
      const kept = cutUtf8(data, cap - size[stream]);
      // A frame larger than what is left is kept in part, up to the cap.
      out[stream] += kept.text;
      size[stream] += Buffer.byteLength(kept.text);
      if (kept.cut) out.truncated = true;
    };
    const { exitCode, timedOut } = await this.#run(
      ref,
      req,
      (event) => append(event.stream, event.data),
      opts,
    );
    return {
      exitCode,
      stdout: out.stdout,
      stderr: out.stderr,
      durationMs: Date.now() - started,
      truncated: out.truncated,
      timedOut,
    };
  }

  async execStream(ref: string, req: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number> {
    return (await this.#run(ref, req, emit, opts)).exitCode;
  }

  /** Runs one command through execd's POST /command, parsing its event stream. */
  async #run(
    ref: string,
    req: ExecRequest,
    given: ExecEmit,
    opts?: CallOptions,
  ): Promise<{ exitCode: number; timedOut: boolean }> {
    // Backpressure: what the consumer asks to wait on is awaited before execd's next chunk is read.
    let waits: Promise<void>[] = [];
    const emit = (event: ExecEvent) => {
      const waiting = given(event);
      if (waiting !== undefined) waits.push(waiting);
    };
    let command = req.command ?? shellQuote(req.args ?? []);
    let stdinFile: string | undefined;
    if (req.stdin !== undefined) {
      // execd has no stdin: stage it in a file the command reads, removed afterwards.
      stdinFile = `/tmp/.differently-stdin-${randomBytes(8).toString('hex')}`;
      await this.writeFile(ref, stdinFile, new TextEncoder().encode(req.stdin), opts);
      command = `(${command}) < ${stdinFile}; __s=$?; rm -f ${stdinFile}; exit $__s`;
    }
    const started = Date.now();
    const response = await this.#execd(ref, 'POST', '/command', {
      json: {
        command,
        ...(req.cwd !== undefined && { cwd: req.cwd }),
        ...(req.env !== undefined && { envs: req.env }),
        // Sent only when the request sets one: OpenSandbox then enforces no limit.
        ...(req.timeoutSeconds !== undefined && { timeout: req.timeoutSeconds * 1000 }),
      },
      signal: opts?.signal,
    });
    const events = new ExecdEvents(emit, this.#config.lineEndings, (message) =>
      this.#http.unavailable(message),
    );
    if (response.body === null) throw this.#http.unavailable('execd answered without a body');
    for await (const line of linesOf(response.body)) {
      events.push(line);
      if (waits.length > 0) {
        await Promise.all(waits);
        waits = [];
      }
    }
    return events.end(
      req.timeoutSeconds === undefined ? undefined : req.timeoutSeconds * 1000,
      Date.now() - started,
    );
  }

  async readFile(ref: string, path: string, opts?: CallOptions): Promise<Uint8Array> {
    const response = await this.#execd(ref, 'GET', '/files/download', {
      query: { path },
      signal: opts?.signal,
    });
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > maxReadBytes) {
      await response.body?.cancel();
      throw tooLarge(path);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body ?? []) {
      size += chunk.length;
      if (size > maxReadBytes) throw tooLarge(path);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  }

  async writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void> {
    const form = new FormData();
    // execd reads the metadata from the multipart *files*: it must be a file part with a filename.
    form.append('metadata', new Blob([JSON.stringify({ path })], { type: 'application/json' }), 'metadata');
    form.append('file', new Blob([new Uint8Array(content)]), path.split('/').pop() || 'file');
    await this.#execd(ref, 'POST', '/files/upload', { raw: form, signal: opts?.signal });
  }

  async listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]> {
    const response = await this.#execd(ref, 'GET', '/directories/list', {
      query: { path, depth: '1' },
      signal: opts?.signal,
    });
    const entries = await this.#http.parse(response, fileListSchema, 'GET /directories/list');
    return entries.map((entry) => ({
      name: entry.path.split('/').filter(Boolean).pop() ?? entry.path,
      path: entry.path,
      isDir: entry.type === 'directory',
      size: entry.size ?? 0,
      ...(entry.modified_at !== undefined && { modifiedAt: entry.modified_at }),
    }));
  }

  /** POST pause or resume, then poll until the state settles; a pause that never starts is unsupported. */
  async #transition(
    ref: string,
    action: 'pause' | 'resume',
    target: string,
    opts?: CallOptions,
  ): Promise<void> {
    await this.#http.request('POST', `/sandboxes/${encodeURIComponent(ref)}/${action}`, {
      signal: opts?.signal,
    });
    const deadline = Date.now() + this.#config.readyTimeoutSeconds * 1000;
    const startBy = Date.now() + Math.min(10_000, this.#config.readyTimeoutSeconds * 1000);
    for (;;) {
      const state = (await this.#getRaw(ref, opts)).status.state;
      if (state === target) break;
      if (action === 'pause' && state === 'Running' && Date.now() > startBy) {
        throw adapterErrors.unsupported('pause', { reason: 'the runtime never started the pause', ref });
      }
      if (state === 'Failed' || state === 'Terminated')
        throw adapterErrors.sandboxFailed(`opensandbox: sandbox ${ref} is ${state} after ${action}`);
      if (Date.now() > deadline)
        throw errors.providerUnavailable(`opensandbox: ${action} of ${ref} did not settle (still ${state})`);
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
    if (action === 'resume') await this.#waitReady(ref, opts);
  }

  /** docker pauses and resumes (the process frozen); kubernetes stops and starts (the rootfs committed). */
  #requireRuntime(runtime: 'docker' | 'kubernetes', operation: string): void {
    if (this.#config.runtime !== runtime)
      throw adapterErrors.unsupported(operation, { runtime: this.#config.runtime });
  }

  async pause(ref: string, opts?: CallOptions): Promise<void> {
    this.#requireRuntime('docker', 'pause');
    await this.#transition(ref, 'pause', 'Paused', opts);
  }

  async resume(ref: string, opts?: CallOptions): Promise<void> {
    this.#requireRuntime('docker', 'resume');
    await this.#transition(ref, 'resume', 'Running', opts);
  }

  /** Kubernetes runtime: a pause commits the root filesystem and frees the pod; resume recreates it. */
  async stop(ref: string, opts?: CallOptions): Promise<void> {
    this.#requireRuntime('kubernetes', 'stop');
    await this.#transition(ref, 'pause', 'Paused', opts);
  }

  async start(ref: string, opts?: CallOptions): Promise<void> {
    this.#requireRuntime('kubernetes', 'start');
    await this.#transition(ref, 'resume', 'Running', opts);
  }

  async snapshot(ref: string, kind: 'disk' | 'memory', opts?: CallOptions): Promise<SnapshotInfo> {
    if (kind === 'memory' && !this.#features().includes('snapshots.memory')) {
      throw adapterErrors.unsupported('snapshot', {
        kind,
        reason: 'the pool does not list snapshots.memory',
      });
    }
    const created = await this.#http.json(
      'POST',
      `/sandboxes/${encodeURIComponent(ref)}/snapshots`,
      snapshotSchema,
      {
        json: {},
        signal: opts?.signal,
      },
    );
    const deadline = Date.now() + 900_000;
    for (;;) {
      const snapshot = await this.#http.json(
        'GET',
        `/snapshots/${encodeURIComponent(created.id)}`,
        snapshotSchema,
        {
          signal: opts?.signal,
          idempotent: true,
        },
      );
      if (snapshot.status.state === 'Ready') return { ref: snapshot.id, kind, sizeBytes: 0 };
      if (snapshot.status.state === 'Failed') {
        throw adapterErrors.sandboxFailed(
          `opensandbox: snapshot ${snapshot.id} failed: ${snapshot.status.message ?? 'no reason given'}`,
        );
      }
      if (Date.now() > deadline)
        throw errors.providerUnavailable(`opensandbox: snapshot ${snapshot.id} not ready in 900 s`);
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
  }

  async deleteSnapshot(snapshotRef: string, opts?: CallOptions): Promise<void> {
    await this.#http.request('DELETE', `/snapshots/${encodeURIComponent(snapshotRef)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
  }

  async exposePort(ref: string, port: number, opts?: CallOptions): Promise<string> {
    if (this.#config.ports !== 'signed')
      throw adapterErrors.unsupported('exposePort', { reason: 'ports are not configured' });
    const expires = Math.floor(Date.now() / 1000) + this.#config.portURLSeconds;
    const endpoint = await this.#http.json(
      'GET',
      `/sandboxes/${encodeURIComponent(ref)}/endpoints/${port}`,
      endpointSchema,
      {
        query: { expires: String(expires) },
        signal: opts?.signal,
        idempotent: true,
      },
    );
    // A URL that works only with request headers (the server key, routing headers) is no URL to hand out.
    if (
      endpoint.headers !== undefined &&
      endpoint.headers !== null &&
      Object.keys(endpoint.headers).length > 0
    ) {
      throw adapterErrors.unsupported('exposePort', {
        reason: 'the endpoint needs request headers',
        headers: Object.keys(endpoint.headers),
      });
    }
    return /^https?:\/\//.test(endpoint.endpoint)
      ? endpoint.endpoint
      : `${this.#config.portScheme}://${endpoint.endpoint}`;
  }

  /** Moves the provider's backstop with the sandbox's TTL (fixes the seeds' E0.20). */
  async extendTtl(ref: string, ttlSeconds: number, opts?: CallOptions): Promise<void> {
    const expiresAt = new Date(Date.now() + Math.max(60, ttlSeconds) * 1000).toISOString();
    try {
      await this.#http.request('POST', `/sandboxes/${encodeURIComponent(ref)}/renew-expiration`, {
        json: { expiresAt },
        signal: opts?.signal,
      });
    } catch (error) {
      // An earlier expiry than the current one is refused; the backstop is then already later.
      if (isApiError(error) && (error.code === 'invalid_state' || error.code === 'invalid_request')) return;
      throw error;
    }
  }
}

function tooLarge(path: string): ApiError {
  return new ApiError(
    'payload_too_large',
    `${path} is larger than ${maxReadBytes} bytes; read it in parts with exec`,
    {
      limitBytes: maxReadBytes,
      path,
    },
  );
}
