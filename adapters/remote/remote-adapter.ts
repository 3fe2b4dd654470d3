/**
 * The `remote` adapter kind: a client of the adapter HTTP protocol, so any fleet (libvirt, Proxmox, a
 * cloud account) plugs in as a pool without a new build. It implements every optional interface; what
 * the pool advertises is what the plugin declares on /info (already filtered there).
 */

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
  type Instance,
  type Lifecycle,
  type Pauser,
  type PortExposer,
  type SnapshotInfo,
  type Snapshotter,
  type Streamer,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { ApiError, type ErrorCode, errorCodes, errors, isApiError } from '../../lib/errors.ts';
import { redactSecrets } from '../../lib/redact.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import type * as z from '../../lib/zod.ts';
import { maxDownloadBytes, maxJsonAnswerBytes, readBounded } from '../httpx/bounded-body.ts';
import { linesOf } from '../httpx/lines.ts';
import {
  attachLineSchema,
  capacitySchema,
  envelopeSchema,
  execResultSchema,
  fileListSchema,
  healthSchema,
  infoResponseSchema,
  instanceListSchema,
  instanceSchema,
  maxStreamLineBytes,
  portSchema,
  processInfoSchema,
  processListSchema,
  processOutputSchema,
  protocolBase,
  protocolHeader,
  snapshotSchema,
  streamLineSchema,
} from '../protocol/wire.ts';
import type { RemoteConfig } from './config.ts';

type Fetch = typeof fetch;

export class RemoteAdapter
  implements ExecutionAdapter, Streamer, FileSystem, Lifecycle, Pauser, Snapshotter, PortExposer, ProcessHost
{
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: Fetch;
  #info: AdapterInfo | undefined;

  constructor(config: RemoteConfig, token?: string, fetchImpl: Fetch = fetch) {
    this.#base = config.endpoint.replace(/\/+$/, '');
    this.#token = token;
    this.#timeoutMs = config.timeoutSeconds * 1000;
    this.#fetch = fetchImpl;
  }

  /** What the plugin said of itself on its last /info; before that, a placeholder naming the endpoint. */
  info(): AdapterInfo {
    return (
      this.#info ?? {
        kind: 'remote',
        version: 'unknown',
        trust: 'private',
        isolation: `declared by the plugin at ${this.#base} (not yet read)`,
        protocol: adapterProtocolVersion,
      }
    );
  }

  async capabilities(opts?: CallOptions): Promise<Capabilities> {
    const body = await this.#json('GET', '/info', infoResponseSchema, opts);
    // E0.25: a server of another protocol version is refused, naming both.
    if (body.info.protocol !== adapterProtocolVersion) {
      throw errors.providerUnavailable(
        `the plugin at ${this.#base} speaks adapter protocol ${body.info.protocol}; this control plane speaks ${adapterProtocolVersion}`,
        { endpoint: this.#base, serverProtocol: body.info.protocol, clientProtocol: adapterProtocolVersion },
      );
    }
    this.#info = { ...body.info, kind: `remote:${body.info.kind}` };
    return body.capabilities;
  }

  capacity(opts?: CallOptions): Promise<Capacity> {
    return this.#json('GET', '/capacity', capacitySchema, opts);
  }

  async health(opts?: CallOptions): Promise<void> {
    await this.#json('GET', '/health', healthSchema, opts);
  }

  create(req: CreateRequest, opts?: CallOptions): Promise<Instance> {
    return this.#json('POST', '/instances', instanceSchema, opts, req);
  }

  get(ref: string, opts?: CallOptions): Promise<Instance> {
    return this.#json('GET', `/instances/${enc(ref)}`, instanceSchema, opts);
  }

  list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    return this.#json('GET', `/instances?installation=${enc(installation)}`, instanceListSchema, opts);
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    try {
      await this.#send('DELETE', `/instances/${enc(ref)}`, opts);
    } catch (error) {
      // Idempotent delete: a missing instance is already what was asked for.
      if (isApiError(error) && error.code === 'not_found') return;
      throw error;
    }
  }

  exec(ref: string, req: ExecRequest, opts?: CallOptions): Promise<ExecResult> {
    return this.#json('POST', `/instances/${enc(ref)}/exec`, execResultSchema, opts, req);
  }

  async execStream(ref: string, req: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number> {
    const response = await this.#send('POST', `/instances/${enc(ref)}/exec?stream=1`, opts, req);
    for await (const event of this.#lines(response, streamLineSchema)) {
      if ('exitCode' in event) return event.exitCode;
      if ('error' in event) throw this.#streamFailure(event.error);
      // A promise is waited on before reading more (backpressure: the plugin's stream is read no faster
      // than our client reads ours).
      await emit(event);
    }
    throw this.#unavailable('the stream ended without its final event');
  }

  startProcess(ref: string, request: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo> {
    return this.#json('POST', `/instances/${enc(ref)}/processes`, processInfoSchema, opts, request);
  }

  listProcesses(ref: string, opts?: CallOptions): Promise<ProcessInfo[]> {
    return this.#json('GET', `/instances/${enc(ref)}/processes`, processListSchema, opts);
  }

  /** Held open as long as the caller stays attached: the caller's signal ends it, not the call timeout. */
  async attachProcess(
    ref: string,
    pid: number,
    emit: ExecEmit,
    opts?: CallOptions,
  ): Promise<number | undefined> {
    try {
      const response = await this.#send(
        'POST',
        `${processPath(ref, pid)}/attach`,
        opts,
        {},
        undefined,
        false,
      );
      for await (const event of this.#lines(response, attachLineSchema)) {
        if ('exitCode' in event) return event.exitCode;
        if ('detached' in event) return undefined;
        if ('error' in event) throw this.#streamFailure(event.error);
        await emit(event);
      }
    } catch (error) {
      if (opts?.signal?.aborted) return undefined;
      throw error;
    }
    if (opts?.signal?.aborted) return undefined;
    throw this.#unavailable('the attach ended without its final event');
  }

  readProcessOutput(ref: string, pid: number, maxBytes: number, opts?: CallOptions): Promise<ProcessOutput> {
    return this.#json(
      'GET',
      `${processPath(ref, pid)}/output?maxBytes=${maxBytes}`,
      processOutputSchema,
      opts,
    );
  }

  async writeStdin(ref: string, pid: number, data: Uint8Array, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `${processPath(ref, pid)}/stdin`, opts, undefined, data);
  }

  async closeStdin(ref: string, pid: number, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `${processPath(ref, pid)}/close-stdin`, opts, {});
  }

  async resizeProcess(ref: string, pid: number, size: TerminalSize, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `${processPath(ref, pid)}/resize`, opts, size);
  }

  async signalProcess(ref: string, pid: number, signal: ProcessSignal, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `${processPath(ref, pid)}/signal`, opts, { signal });
  }

  /** An NDJSON answer's lines, each checked against `schema`; blank lines are skipped. */
  async *#lines<S extends z.ZodMiniType>(response: Response, schema: S): AsyncGenerator<z.infer<S>> {
    if (response.body === null) throw this.#unavailable('the stream has no body');
    const tooLong = () => this.#unavailable(`a stream line is longer than ${maxStreamLineBytes} bytes`);
    for await (const line of linesOf(response.body, { maxLineBytes: maxStreamLineBytes, tooLong })) {
      if (line.trim() === '') continue;
      if (Buffer.byteLength(line) > maxStreamLineBytes) throw tooLong();
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw this.#unavailable('the stream carried a line that is not JSON');
      }
      const event = schema.safeParse(raw);
      if (!event.success) throw this.#unavailable('the stream carried an unknown event');
      yield event.data;
    }
  }

  #streamFailure(failure: string | { code: string; message: string }): ApiError {
    // A contract error the plugin met after its status line (the process ended under the attach, say).
    if (typeof failure !== 'string' && (errorCodes as readonly string[]).includes(failure.code))
      return new ApiError(failure.code as ErrorCode, this.#redact(failure.message), { endpoint: this.#base });
    return errors.providerUnavailable(
      `the plugin's stream failed: ${this.#redact(typeof failure === 'string' ? failure : failure.message)}`,
    );
  }

  async readFile(ref: string, path: string, opts?: CallOptions): Promise<Uint8Array> {
    const response = await this.#send('GET', `/instances/${enc(ref)}/files/content?path=${enc(path)}`, opts);
    return new Uint8Array(await readBounded(response, maxDownloadBytes, 'a file download'));
  }

  async writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void> {
    await this.#send(
      'PUT',
      `/instances/${enc(ref)}/files/content?path=${enc(path)}`,
      opts,
      undefined,
      content,
    );
  }

  listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]> {
    return this.#json('GET', `/instances/${enc(ref)}/files?path=${enc(path)}`, fileListSchema, opts);
  }

  async stop(ref: string, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `/instances/${enc(ref)}/stop`, opts);
  }

  async start(ref: string, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `/instances/${enc(ref)}/start`, opts);
  }

  async pause(ref: string, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `/instances/${enc(ref)}/pause`, opts);
  }

  async resume(ref: string, opts?: CallOptions): Promise<void> {
    await this.#send('POST', `/instances/${enc(ref)}/resume`, opts);
  }

  async snapshot(ref: string, kind: 'disk' | 'memory', opts?: CallOptions): Promise<SnapshotInfo> {
    const taken = await this.#json('POST', `/instances/${enc(ref)}/snapshots`, snapshotSchema, opts, {
      kind,
    });
    // A plugin that leaves out the kind took the one asked for.
    return { ref: taken.ref, kind: taken.kind ?? kind, sizeBytes: taken.sizeBytes };
  }

  async deleteSnapshot(snapshotRef: string, opts?: CallOptions): Promise<void> {
    try {
      await this.#send('DELETE', `/snapshots/${enc(snapshotRef)}`, opts);
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') return;
      throw error;
    }
  }

  async exposePort(ref: string, port: number, opts?: CallOptions): Promise<string> {
    return (await this.#json('POST', `/instances/${enc(ref)}/ports`, portSchema, opts, { port })).url;
  }

  async #json<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    opts?: CallOptions,
    body?: unknown,
  ): Promise<z.infer<S>> {
    const response = await this.#send(method, path, opts, body);
    const text = (await readBounded(response, maxJsonAnswerBytes, `${method} ${path}`)).toString('utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw this.#unavailable(`${method} ${path} answered ${response.status} with a body that is not JSON`);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      throw this.#unavailable(`${method} ${path} answered ${response.status} with an unexpected body`);
    }
    return parsed.data;
  }

  /** One request: a 2xx response with the protocol header, or the error the server or transport gave. */
  async #send(
    method: string,
    path: string,
    opts?: CallOptions,
    body?: unknown,
    raw?: Uint8Array,
    timed = true,
  ): Promise<Response> {
    const signals = [
      ...(timed ? [AbortSignal.timeout(this.#timeoutMs)] : []),
      ...(opts?.signal === undefined ? [] : [opts.signal]),
    ];
    const signal = AbortSignal.any(signals);
    let response: Response;
    try {
      response = await this.#fetch(`${this.#base}${protocolBase}${path}`, {
        method,
        signal,
        headers: {
          ...(this.#token !== undefined && this.#token !== '' && { authorization: `Bearer ${this.#token}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(raw !== undefined && { 'content-type': 'application/octet-stream' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        ...(raw !== undefined && { body: raw }),
      });
    } catch (error) {
      const reason = signal.aborted ? 'timed out or was cancelled' : (error as Error).message;
      throw errors.providerUnavailable(`the plugin at ${this.#base} could not be reached: ${reason}`, {
        endpoint: this.#base,
      });
    }
    const version = response.headers.get(protocolHeader);
    if (version !== adapterProtocolVersion) {
      await response.body?.cancel();
      throw errors.providerUnavailable(
        version === null
          ? `${this.#base} did not answer as a Differently adapter (no ${protocolHeader} header; status ${response.status})`
          : `the plugin at ${this.#base} speaks adapter protocol ${version}; this control plane speaks ${adapterProtocolVersion}`,
        {
          endpoint: this.#base,
          status: response.status,
          serverProtocol: version,
          clientProtocol: adapterProtocolVersion,
        },
      );
    }
    if (response.ok) return response;
    const text = await response.text();
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      payload = undefined;
    }
    const envelope = envelopeSchema.safeParse(payload);
    if (!envelope.success) {
      throw this.#unavailable(`${method} ${path} answered ${response.status} without an error envelope`, {
        status: response.status,
      });
    }
    // A plugin that quotes the token back gets it removed before the message goes anywhere.
    const { code, message, details } = this.#redact(envelope.data.error);
    // 401 from the plugin is our credential being refused: an outage of this pool, never echoing the token.
    if (code === 'unauthenticated') {
      throw errors.providerUnavailable(`the plugin at ${this.#base} rejected the credentials`, {
        endpoint: this.#base,
        status: response.status,
      });
    }
    throw new ApiError(code, message, { ...details, endpoint: this.#base });
  }

  #redact<T>(value: T): T {
    const token = this.#token;
    if (token === undefined || token.length < 4) return value;
    const text = JSON.stringify(value);
    const redacted = redactSecrets(text, [token]);
    if (redacted === text) return value;
    const parsed: T = JSON.parse(redacted);
    return parsed;
  }

  #unavailable(message: string, details: Record<string, unknown> = {}): ApiError {
    return errors.providerUnavailable(`remote adapter ${this.#base}: ${message}`, {
      endpoint: this.#base,
      ...details,
    });
  }
}

function enc(value: string): string {
  return encodeURIComponent(value);
}

function processPath(ref: string, pid: number): string {
  return `/instances/${enc(ref)}/processes/${pid}`;
}
