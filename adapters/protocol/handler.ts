/**
 * Serves any ExecutionAdapter over the adapter HTTP protocol (adapter specification section 7). The core
 * is transport-neutral (`createProtocolHandler`); `server.ts` runs it as a Node HTTP server and
 * `lambda.ts` behind a Lambda Function URL.
 */

import { effectiveFeatures, type Feature } from '../../lib/adapter/features.ts';
import {
  adapterProtocolVersion,
  type ExecutionAdapter,
  isFileSystem,
  isLifecycle,
  isPauser,
  isPortExposer,
  isSnapshotter,
  isStreamer,
} from '../../lib/adapter/port.ts';
import { isProcessHost, type ProcessHost } from '../../lib/adapter/processes.ts';
import { formatIssues } from '../../lib/config.ts';
import { ApiError, type ErrorCode, errors, httpStatusOf, isApiError } from '../../lib/errors.ts';
import { secretsEqual } from '../../lib/tenancy/auth.ts';
import type * as z from '../../lib/zod.ts';
import {
  createRequestSchema,
  execRequestSchema,
  maxFileBytes,
  maxJsonBytes,
  maxProcessInputBytes,
  portRequestSchema,
  processStartRequestSchema,
  protocolBase,
  protocolHeader,
  resizeRequestSchema,
  signalRequestSchema,
  snapshotRequestSchema,
} from './wire.ts';

export interface ProtocolRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: URLSearchParams;
  /** Header names lower-cased. */
  headers: Record<string, string | undefined>;
  body: Buffer | undefined;
}

export interface ProtocolResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
  /**
   * NDJSON written line by line (streamed exec); `body` is then empty. `write` returns a promise while the
   * reader is behind: the adapter's emit hands it on, so a command's output waits for the client.
   * `closed` is aborted when the client goes away (an attach then detaches).
   */
  stream?: (write: (line: string) => undefined | Promise<void>, closed: AbortSignal) => Promise<void>;
}

export interface ProtocolHandlerOptions {
  /** When set, every route (including /info and /health) needs `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** The features to declare; default: what the adapter declares. Filtered by EffectiveFeatures either way. */
  features?: string[] | undefined;
  /** Where to report handler failures (never with the token). */
  onError?: (error: unknown) => void;
}

export interface ProtocolHandler {
  (request: ProtocolRequest): Promise<ProtocolResponse>;
  /** Whether these headers carry the token: checked before a body is read. */
  authorized(headers: Record<string, string | undefined>): boolean;
  /** The largest body this route accepts, so a server can refuse more (413) before reading it whole. */
  bodyLimit(method: string, path: string): number;
}

/** Protocol statuses: the contract's own, except capacity and one sandbox's failure, which are 503. */
function statusOf(code: ErrorCode): number {
  return code === 'insufficient_capacity' || code === 'sandbox_failed' ? 503 : httpStatusOf(code);
}

const baseHeaders = { [protocolHeader]: adapterProtocolVersion };

function json(status: number, body: unknown): ProtocolResponse {
  return {
    status,
    headers: { ...baseHeaders, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

function empty(): ProtocolResponse {
  return { status: 204, headers: { ...baseHeaders }, body: '' };
}

function errorResponse(error: ApiError): ProtocolResponse {
  return json(statusOf(error.code), {
    error: { code: error.code, message: error.message, details: error.details },
  });
}

function parse<S extends z.ZodMiniType>(schema: S, body: Buffer | undefined): z.infer<S> {
  let raw: unknown = {};
  if (body !== undefined && body.length > 0) {
    try {
      raw = JSON.parse(body.toString('utf8'));
    } catch {
      throw errors.invalidRequest('the request body is not valid JSON');
    }
  }
  const result = schema.safeParse(raw);
  if (!result.success) throw errors.invalidRequest(`invalid body: ${formatIssues(result.error.issues)}`);
  return result.data;
}

function requiredQuery(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (value === null || value === '') throw errors.invalidRequest(`the ${name} query parameter is required`);
  return value;
}

const lifecycleActions = new Set(['stop', 'start', 'pause', 'resume']);

export function createProtocolHandler(
  adapter: ExecutionAdapter,
  options: ProtocolHandlerOptions = {},
): ProtocolHandler {
  let features: { list: string[]; until: number } | undefined;
  // What the adapter advertises, cached briefly: every optional route checks it.
  const effective = async (): Promise<string[]> => {
    if (features !== undefined && features.until > Date.now()) return features.list;
    const declared = options.features ?? (await adapter.capabilities()).features;
    features = { list: effectiveFeatures(adapter, declared), until: Date.now() + 30_000 };
    return features.list;
  };
  const requireFeature = async (feature: Feature, available: boolean, operation: string) => {
    if (!available || !(await effective()).includes(feature)) {
      throw errors.unsupportedOperation(operation, { adapter: adapter.info().kind });
    }
  };

  const authorized = (headers: Record<string, string | undefined>) => {
    if (options.token === undefined || options.token === '') return true;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    return match?.[1] !== undefined && secretsEqual(match[1], options.token);
  };

  async function route(request: ProtocolRequest): Promise<ProtocolResponse> {
    const { method, query } = request;
    if (!request.path.startsWith(`${protocolBase}/`))
      throw new ApiError('not_found', `no route for ${request.path}`);
    const parts = request.path
      .slice(protocolBase.length + 1)
      .split('/')
      .map((part) => decodeURIComponent(part));
    const [head, ref, action, extra] = parts;
    if (parts.length === 1 && method === 'GET') {
      if (head === 'info') {
        const capabilities = await adapter.capabilities();
        const list = effectiveFeatures(adapter, options.features ?? capabilities.features);
        return json(200, { info: adapter.info(), capabilities: { ...capabilities, features: list } });
      }
      if (head === 'capacity') return json(200, await adapter.capacity());
      if (head === 'health') {
        try {
          await adapter.health();
        } catch (error) {
          throw isApiError(error)
            ? error
            : errors.providerUnavailable(`unhealthy: ${(error as Error).message}`);
        }
        return json(200, { status: 'ok' });
      }
    }
    if (head === 'instances' && ref === undefined) {
      if (method === 'POST') return json(200, await adapter.create(parse(createRequestSchema, request.body)));
      if (method === 'GET') return json(200, await adapter.list(requiredQuery(query, 'installation')));
    }
    if (head === 'snapshots' && ref !== undefined && action === undefined && method === 'DELETE') {
      const has = isSnapshotter(adapter);
      const list = await effective();
      if (!has || !(list.includes('snapshots.disk') || list.includes('snapshots.memory'))) {
        throw errors.unsupportedOperation('deleteSnapshot', { adapter: adapter.info().kind });
      }
      if (isSnapshotter(adapter)) await adapter.deleteSnapshot(ref);
      return empty();
    }
    if (head === 'instances' && ref !== undefined && action === 'processes') {
      return processRoute(request, ref, parts.slice(3));
    }
    if (head === 'instances' && ref !== undefined && extra === undefined) {
      if (action === undefined) {
        if (method === 'GET') return json(200, await adapter.get(ref));
        if (method === 'DELETE') {
          await adapter.delete(ref);
          return empty();
        }
      }
      if (action === 'exec' && method === 'POST') {
        const exec = parse(execRequestSchema, request.body);
        if (query.get('stream') !== '1') return json(200, await adapter.exec(ref, exec));
        await requireFeature('exec.stream', isStreamer(adapter), 'execStream');
        if (!isStreamer(adapter)) throw errors.unsupportedOperation('execStream');
        const streamer = adapter;
        return {
          status: 200,
          headers: { ...baseHeaders, 'content-type': 'application/x-ndjson' },
          body: '',
          // The status line is sent: a later failure can only be a final {"error": message}.
          stream: async (write) => {
            try {
              const exitCode = await streamer.execStream(ref, exec, (event) =>
                write(`${JSON.stringify(event)}\n`),
              );
              write(`${JSON.stringify({ exitCode })}\n`);
            } catch (error) {
              options.onError?.(error);
              write(`${JSON.stringify({ error: isApiError(error) ? error.message : 'internal error' })}\n`);
            }
          },
        };
      }
      if (action === 'files' && method === 'GET') {
        await requireFeature('files', isFileSystem(adapter), 'listFiles');
        if (isFileSystem(adapter))
          return json(200, await adapter.listFiles(ref, requiredQuery(query, 'path')));
      }
      if (action === 'snapshots' && method === 'POST') {
        const { kind } = parse(snapshotRequestSchema, request.body);
        await requireFeature(
          kind === 'memory' ? 'snapshots.memory' : 'snapshots.disk',
          isSnapshotter(adapter),
          'snapshot',
        );
        if (isSnapshotter(adapter)) return json(200, await adapter.snapshot(ref, kind));
      }
      if (action === 'ports' && method === 'POST') {
        const { port } = parse(portRequestSchema, request.body);
        await requireFeature('ports.expose', isPortExposer(adapter), 'exposePort');
        if (isPortExposer(adapter)) return json(200, { url: await adapter.exposePort(ref, port) });
      }
      if (action !== undefined && lifecycleActions.has(action) && method === 'POST') {
        if (action === 'stop' || action === 'start') {
          await requireFeature('lifecycle.stop-start', isLifecycle(adapter), action);
          if (isLifecycle(adapter)) await (action === 'stop' ? adapter.stop(ref) : adapter.start(ref));
        } else {
          await requireFeature('lifecycle.pause-resume', isPauser(adapter), action);
          if (isPauser(adapter)) await (action === 'pause' ? adapter.pause(ref) : adapter.resume(ref));
        }
        return empty();
      }
      if (
        action !== undefined &&
        !['exec', 'files', 'snapshots', 'ports'].includes(action) &&
        method === 'POST'
      ) {
        throw new ApiError('not_found', `unknown action ${action}`, { action });
      }
    }
    if (head === 'instances' && ref !== undefined && action === 'files' && extra === 'content') {
      const path = requiredQuery(query, 'path');
      if (method === 'GET') {
        await requireFeature('files', isFileSystem(adapter), 'readFile');
        if (isFileSystem(adapter)) {
          const bytes = await adapter.readFile(ref, path, { maxBytes: maxFileBytes });
          return {
            status: 200,
            headers: { ...baseHeaders, 'content-type': 'application/octet-stream' },
            body: Buffer.from(bytes),
          };
        }
      }
      if (method === 'PUT') {
        await requireFeature('files', isFileSystem(adapter), 'writeFile');
        if (isFileSystem(adapter)) {
          await adapter.writeFile(ref, path, new Uint8Array(request.body ?? Buffer.alloc(0)));
          return empty();
        }
      }
    }
    throw new ApiError('not_found', `no route for ${method} ${request.path}`, { path: request.path });
  }

  /** /instances/{ref}/processes[/{pid}[/{verb}]]: interactive processes, behind exec.stdin (a pty: exec.pty). */
  async function processRoute(
    request: ProtocolRequest,
    ref: string,
    rest: string[],
  ): Promise<ProtocolResponse> {
    const { method } = request;
    await requireFeature('exec.stdin', isProcessHost(adapter), 'processes');
    if (!isProcessHost(adapter)) throw errors.unsupportedOperation('processes');
    const host: ProcessHost = adapter;
    const [pidText, verb, ...more] = rest;
    if (pidText === undefined) {
      if (method === 'GET') return json(200, await host.listProcesses(ref));
      if (method === 'POST') {
        const start = parse(processStartRequestSchema, request.body);
        if (start.pty !== undefined) await requireFeature('exec.pty', true, 'startProcess with a terminal');
        return json(200, await host.startProcess(ref, start));
      }
    }
    const pid = Number(pidText);
    if (pidText !== undefined && (!/^\d{1,10}$/.test(pidText) || !Number.isSafeInteger(pid)))
      throw errors.invalidRequest(`not a process id: ${pidText}`);
    if (more.length === 0 && pidText !== undefined) {
      if (verb === undefined && method === 'GET') {
        const found = (await host.listProcesses(ref)).find((process) => process.pid === pid);
        if (found === undefined) throw new ApiError('not_found', `no process ${pid}`, { pid });
        return json(200, found);
      }
      if (verb === 'output' && method === 'GET') {
        const maxBytes = Number(request.query.get('maxBytes') ?? maxJsonBytes / 2);
        if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > maxJsonBytes / 2)
          throw errors.invalidRequest(`maxBytes must be an integer from 1 to ${maxJsonBytes / 2}`);
        return json(200, await host.readProcessOutput(ref, pid, maxBytes));
      }
      if (method === 'POST') {
        switch (verb) {
          case 'stdin':
            await host.writeStdin(ref, pid, new Uint8Array(request.body ?? Buffer.alloc(0)));
            return empty();
          case 'close-stdin':
            await host.closeStdin(ref, pid);
            return empty();
          case 'resize':
            await host.resizeProcess(ref, pid, parse(resizeRequestSchema, request.body));
            return empty();
          case 'signal':
            await host.signalProcess(ref, pid, parse(signalRequestSchema, request.body).signal);
            return empty();
          case 'attach':
            // A pid that is not there is a plain 404, before the stream's status line.
            if (!(await host.listProcesses(ref)).some((process) => process.pid === pid))
              throw new ApiError('not_found', `no process ${pid}`, { pid });
            return {
              status: 200,
              headers: { ...baseHeaders, 'content-type': 'application/x-ndjson' },
              body: '',
              stream: async (write, closed) => {
                try {
                  const exitCode = await host.attachProcess(
                    ref,
                    pid,
                    (event) => write(`${JSON.stringify(event)}\n`),
                    { signal: closed },
                  );
                  write(`${JSON.stringify(exitCode === undefined ? { detached: true } : { exitCode })}\n`);
                } catch (error) {
                  if (!isApiError(error)) options.onError?.(error);
                  const failure = isApiError(error)
                    ? { code: error.code, message: error.message }
                    : { code: 'internal', message: 'internal error' };
                  write(`${JSON.stringify({ error: failure })}\n`);
                }
              },
            };
        }
      }
    }
    throw new ApiError('not_found', `no route for ${method} ${request.path}`, { path: request.path });
  }

  const handle = async (request: ProtocolRequest): Promise<ProtocolResponse> => {
    if (!authorized(request.headers))
      return errorResponse(errors.unauthenticated('a valid adapter token is required'));
    try {
      return await route(request);
    } catch (error) {
      if (isApiError(error)) return errorResponse(error);
      options.onError?.(error);
      return errorResponse(new ApiError('internal', 'internal error'));
    }
  };
  return Object.assign(handle, {
    authorized,
    bodyLimit: (method: string, path: string) =>
      method === 'PUT' && path.endsWith('/files/content')
        ? maxFileBytes
        : /\/processes\/\d+\/stdin$/.test(path)
          ? maxProcessInputBytes
          : maxJsonBytes,
  });
}
