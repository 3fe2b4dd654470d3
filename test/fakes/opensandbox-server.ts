import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import { FakeProvider, formDataOf, parseJson, sendJson as send } from './fake-http.ts';

/**
 * A fake OpenSandbox server faithful to the published lifecycle and execd APIs
 * (../shared/reference/providers/opensandbox.md and its specs): routes under /v1, the API key header,
 * `{code, message}` errors with namespaced codes, FastAPI's 422 `{detail}` for schema errors, page
 * paging with a double-encoded metadata filter, states that move with time as the server's do (polled or not), empty 202s with Content-Length: 0, an X-Request-ID on every answer, and execd's event
 * stream of bare JSON frames. Commands really run (as host processes), so output parsing is real.
 */
export interface OpenSandboxFakeOptions {
  apiKey?: string;
  runtime?: 'docker' | 'kubernetes';
}

interface FakeSandbox {
  id: string;
  state: string;
  reason?: string;
  message?: string;
  metadata: Record<string, string>;
  env: Record<string, string>;
  entrypoint: string[];
  image?: { uri: string };
  snapshotId?: string;
  createdAt: string;
  expiresAt?: string;
  /** When the next state is reached: as on the server, by time, whether anyone polls or not. */
  settleAt: number;
  next?: string;
}

interface FakeSnapshot {
  id: string;
  sandboxId: string;
  state: string;
  createdAt: string;
  polls: number;
}

const metadataValue = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export class OpenSandboxFake extends FakeProvider {
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly snapshots = new Map<string, FakeSnapshot>();
  /** Every create body and execd command body received, for checks against the published schemas. */
  readonly received: { createBodies: unknown[]; commandBodies: unknown[] } = {
    createBodies: [],
    commandBodies: [],
  };
  /** Knobs for the seeds' scenarios. */
  readonly faults = {
    /** Lists answer every sandbox, whatever the filter asks: the adapter must filter by itself. */
    ignoreListFilter: false,
    /** The next list request for this page number answers 500. */
    failListPage: undefined as number | undefined,
    /** Pauses are accepted (202) but the runtime never starts them. */
    pauseNeverStarts: false,
    /** The next create answers 504 KUBERNETES::POD_READY_TIMEOUT (the workload already deleted). */
    podReadyTimeout: false,
    /** The next create is done, then the connection is dropped before the answer. */
    dropCreateResponse: false,
    /** The next create answers this status and code. */
    failCreate: undefined as { status: number; code: string } | undefined,
    /** Every lifecycle route answers 503. */
    down: false,
    /** The next created sandbox stays Pending (a slow image pull that outlasts the caller). */
    neverReady: false,
    /** On the next list, this sandbox is shown Stopping and is gone right after. */
    deleteWhileListed: undefined as string | undefined,
  };
  readonly #options: OpenSandboxFakeOptions;

  constructor(options: OpenSandboxFakeOptions = {}) {
    super();
    this.#options = options;
  }

  protected internalError(res: ServerResponse, error: unknown): void {
    send(res, 500, { code: 'GENERAL::UNKNOWN_ERROR', message: String(error) });
  }

  protected async handle(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void> {
    // Every answer carries the request id the server's middleware sets.
    res.setHeader('x-request-id', randomUUID());
    if (url.pathname === '/health') return send(res, 200, { status: 'healthy' });
    const execd = /^\/execd\/([^/]+)(\/.*)$/.exec(url.pathname);
    if (execd?.[1] !== undefined && execd[2] !== undefined)
      return this.#execd(execd[1], execd[2], url, req, body, res);
    const path = url.pathname.startsWith('/v1/') ? url.pathname.slice(3) : url.pathname;
    if (this.#options.apiKey !== undefined) {
      const key = req.headers['open-sandbox-api-key'];
      if (key === undefined) return send(res, 401, { code: 'MISSING_API_KEY', message: 'Missing API key' });
      if (key !== this.#options.apiKey)
        return send(res, 401, { code: 'INVALID_API_KEY', message: 'Invalid API key' });
    }
    if (this.faults.down)
      return send(res, 503, { code: 'GENERAL::UNAVAILABLE', message: 'server overloaded' });
    const method = req.method ?? 'GET';
    const parts = path.split('/').filter(Boolean);
    if (parts[0] === 'sandboxes' && parts.length === 1 && method === 'POST')
      return this.#create(parseJson(body), res, req);
    if (parts[0] === 'sandboxes' && parts.length === 1 && method === 'GET') return this.#list(url, res);
    const sandbox =
      parts[0] === 'sandboxes' && parts[1] !== undefined ? this.sandboxes.get(parts[1]) : undefined;
    if (parts[0] === 'sandboxes' && parts[1] !== undefined) {
      if (sandbox === undefined)
        return send(res, 404, {
          code: 'DOCKER::SANDBOX_NOT_FOUND',
          message: `sandbox ${parts[1]} not found`,
        });
      if (parts.length === 2 && method === 'GET') return send(res, 200, this.#view(this.#advance(sandbox)));
      if (parts.length === 2 && method === 'DELETE') {
        sandbox.state = 'Stopping';
        sandbox.next = 'Terminated';
        sandbox.settleAt = this.#settleTime();
        sandbox.reason = 'user_delete';
        await this.host.remove(sandbox.id);
        res.writeHead(204).end();
        return;
      }
      const action = parts[2];
      if (action === 'pause' && method === 'POST') {
        if (sandbox.state !== 'Running')
          return send(res, 409, { code: 'DOCKER::SANDBOX_NOT_RUNNING', message: 'not running' });
        if (!this.faults.pauseNeverStarts)
          Object.assign(sandbox, { state: 'Pausing', next: 'Paused', settleAt: this.#settleTime() });
        // The real server frames an empty 202 with Content-Length: 0 (the official SDK reads it so).
        res.writeHead(202, { 'content-length': '0' }).end();
        return;
      }
      if (action === 'resume' && method === 'POST') {
        if (sandbox.state !== 'Paused')
          return send(res, 409, { code: 'DOCKER::SANDBOX_NOT_PAUSED', message: 'not paused' });
        Object.assign(sandbox, { state: 'Resuming', next: 'Running', settleAt: this.#settleTime() });
        // The real server frames an empty 202 with Content-Length: 0 (the official SDK reads it so).
        res.writeHead(202, { 'content-length': '0' }).end();
        return;
      }
      if (action === 'renew-expiration' && method === 'POST') {
        const { expiresAt } = parseJson(body) as { expiresAt?: string };
        if (sandbox.expiresAt === undefined)
          return send(res, 409, { code: 'DOCKER::INVALID_EXPIRATION', message: 'no expiry' });
        if (expiresAt === undefined || expiresAt <= sandbox.expiresAt)
          return send(res, 400, { code: 'SANDBOX::EXPIRATION_NOT_EXTENDED', message: 'must be later' });
        sandbox.expiresAt = expiresAt;
        return send(res, 200, { expiresAt });
      }
      if (action === 'endpoints' && parts[3] !== undefined && method === 'GET') {
        const port = Number(parts[3]);
        const expires = url.searchParams.get('expires');
        if (port === 44772)
          return send(res, 200, { endpoint: `${this.url.replace('http://', '')}/execd/${sandbox.id}` });
        if (expires !== null) {
          if (this.#options.runtime !== 'kubernetes')
            return send(res, 400, {
              code: 'SANDBOX::API_NOT_SUPPORTED',
              message: 'signed routes need the ingress gateway',
            });
          return send(res, 200, { endpoint: `gateway.example/${sandbox.id}/${port}/sig-${expires}` });
        }
        return send(res, 200, {
          endpoint: `gateway.example/${sandbox.id}/${port}`,
          headers: { 'OpenSandbox-Ingress-To': `${sandbox.id}-${port}` },
        });
      }
      if (action === 'snapshots' && method === 'POST') {
        if (sandbox.state !== 'Running')
          return send(res, 409, { code: 'SNAPSHOT::INVALID_SOURCE_STATE', message: 'not running' });
        const snapshot = {
          id: randomUUID(),
          sandboxId: sandbox.id,
          state: 'Creating',
          createdAt: new Date().toISOString(),
          polls: 1,
        };
        this.snapshots.set(snapshot.id, snapshot);
        await this.host.copy(sandbox.id, `snap-${snapshot.id}`);
        return send(res, 202, this.#snapshotView(snapshot));
      }
    }
    if (parts[0] === 'snapshots' && parts[1] !== undefined) {
      const snapshot = this.snapshots.get(parts[1]);
      if (snapshot === undefined)
        return send(res, 404, { code: 'SNAPSHOT::NOT_FOUND', message: 'snapshot not found' });
      if (method === 'GET') {
        if (snapshot.state === 'Creating' && snapshot.polls-- <= 0) snapshot.state = 'Ready';
        return send(res, 200, this.#snapshotView(snapshot));
      }
      if (method === 'DELETE') {
        if (snapshot.state === 'Creating')
          return send(res, 409, { code: 'SNAPSHOT::INVALID_STATE', message: 'still creating' });
        this.snapshots.delete(snapshot.id);
        res.writeHead(204).end();
        return;
      }
    }
    send(res, 404, { code: 'GENERAL::NOT_FOUND', message: `no route ${method} ${path}` });
  }

  async #create(body: unknown, res: ServerResponse, req: IncomingMessage): Promise<void> {
    this.received.createBodies.push(body);
    if (this.faults.failCreate !== undefined) {
      const { status, code } = this.faults.failCreate;
      this.faults.failCreate = undefined;
      return send(res, status, { code, message: `injected ${code}` });
    }
    if (this.faults.podReadyTimeout) {
      this.faults.podReadyTimeout = false;
      return send(res, 504, {
        code: 'KUBERNETES::POD_READY_TIMEOUT',
        message: 'pod not ready in 60s; workload deleted',
      });
    }
    const b = (body ?? {}) as Record<string, unknown>;
    const poolRef = (b.extensions as Record<string, string> | undefined)?.poolRef;
    if (poolRef === undefined && (b.image === undefined) === (b.snapshotId === undefined))
      return send(res, 400, {
        code: 'SANDBOX::INVALID_PARAMETER',
        message: 'exactly one of image or snapshotId',
      });
    if (b.image !== undefined && !(Array.isArray(b.entrypoint) && b.entrypoint.length > 0))
      return send(res, 400, {
        code: 'SANDBOX::INVALID_PARAMETER',
        message: 'entrypoint is required with image',
      });
    if (poolRef === undefined && typeof b.resourceLimits !== 'object')
      return unprocessable(res, ['body', 'resourceLimits'], 'Field required');
    if (
      b.timeout !== undefined &&
      b.timeout !== null &&
      !(Number.isInteger(b.timeout) && (b.timeout as number) >= 60)
    )
      return unprocessable(res, ['body', 'timeout'], 'Input should be greater than or equal to 60');
    const metadata = (b.metadata ?? {}) as Record<string, string>;
    for (const [key, value] of Object.entries(metadata)) {
      if (key.startsWith('opensandbox.io/'))
        return send(res, 400, {
          code: 'SANDBOX::INVALID_METADATA_LABEL',
          message: `reserved prefix: ${key}`,
        });
      if (value.length > 63 || !metadataValue.test(value))
        return send(res, 400, { code: 'SANDBOX::INVALID_METADATA_LABEL', message: `bad value for ${key}` });
    }
    const id = randomUUID();
    const now = new Date();
    const sandbox: FakeSandbox = {
      id,
      state: this.#options.runtime === 'kubernetes' ? 'Running' : 'Pending',
      metadata,
      env: (b.env ?? {}) as Record<string, string>,
      entrypoint: (b.entrypoint as string[] | undefined) ?? ['tail', '-f', '/dev/null'],
      createdAt: now.toISOString(),
      settleAt: this.#settleTime(),
      next: 'Running',
      ...(typeof b.timeout === 'number' && {
        expiresAt: new Date(now.getTime() + b.timeout * 1000).toISOString(),
      }),
    };
    if (b.snapshotId !== undefined) {
      const snapshot = this.snapshots.get(String(b.snapshotId));
      if (snapshot === undefined)
        return send(res, 404, { code: 'SNAPSHOT::NOT_FOUND', message: 'snapshot not found' });
      if (snapshot.state !== 'Ready')
        return send(res, 409, { code: 'SNAPSHOT::NOT_READY', message: 'snapshot not ready' });
      sandbox.snapshotId = snapshot.id;
      await this.host.copy(`snap-${snapshot.id}`, id);
    } else if (b.image !== undefined) {
      sandbox.image = b.image as { uri: string };
      if (sandbox.image.uri.includes('does-not-exist')) {
        Object.assign(sandbox, {
          state: 'Pending',
          next: 'Failed',
          reason: 'image_pull_error',
          message: `Failed to pull image ${sandbox.image.uri}: manifest unknown`,
        });
      }
    }
    if (this.faults.neverReady) {
      this.faults.neverReady = false;
      Object.assign(sandbox, { state: 'Pending', next: undefined });
    }
    await this.host.dir(id);
    this.sandboxes.set(id, sandbox);
    if (this.faults.dropCreateResponse) {
      this.faults.dropCreateResponse = false;
      req.socket.destroy();
      return;
    }
    send(res, 202, {
      id,
      status: { state: sandbox.state },
      metadata,
      createdAt: sandbox.createdAt,
      entrypoint: sandbox.entrypoint,
      ...(sandbox.expiresAt !== undefined && { expiresAt: sandbox.expiresAt }),
    });
  }

  #list(url: URL, res: ServerResponse) {
    const page = Number(url.searchParams.get('page') ?? '1');
    const pageSize = Number(url.searchParams.get('pageSize') ?? '20');
    if (pageSize > 200)
      return unprocessable(res, ['query', 'pageSize'], 'Input should be less than or equal to 200');
    if (this.faults.failListPage === page) {
      this.faults.failListPage = undefined;
      return send(res, 500, { code: 'GENERAL::UNKNOWN_ERROR', message: 'listing failed' });
    }
    let filter: [string, string][] = [];
    const raw = url.searchParams.get('metadata');
    if (raw !== null && raw !== '') {
      const pairs = raw.split('&');
      if (pairs.some((pair) => !pair.includes('=')))
        return send(res, 400, {
          code: 'SANDBOX::INVALID_METADATA_FORMAT',
          message: 'metadata must be k=v&k=v',
        });
      filter = [...new URLSearchParams(raw).entries()];
    }
    const states = url.searchParams.getAll('state');
    const vanishing = this.faults.deleteWhileListed;
    this.faults.deleteWhileListed = undefined;
    const all = [...this.sandboxes.values()]
      .filter((s) => this.faults.ignoreListFilter || filter.every(([k, v]) => s.metadata[k] === v))
      .filter((s) => states.length === 0 || states.includes(s.state));
    const items = all.slice((page - 1) * pageSize, page * pageSize).map((s) => {
      if (s.id !== vanishing) return this.#view(this.#advance(s));
      const view = this.#view({ ...s, state: 'Stopping' });
      this.sandboxes.delete(s.id);
      return view;
    });
    send(res, 200, {
      items,
      pagination: {
        page,
        pageSize,
        totalItems: all.length,
        totalPages: Math.ceil(all.length / pageSize),
        hasNextPage: page * pageSize < all.length,
      },
    });
  }

  /** A transition takes this long (the server's runtime works on its own clock). */
  #settleTime(): number {
    return Date.now() + 30;
  }

  #advance(sandbox: FakeSandbox): FakeSandbox {
    if (sandbox.next !== undefined && Date.now() >= sandbox.settleAt) {
      sandbox.state = sandbox.next;
      sandbox.next = undefined;
    }
    return sandbox;
  }

  #view(s: FakeSandbox) {
    return {
      id: s.id,
      status: {
        state: s.state,
        ...(s.reason !== undefined && { reason: s.reason }),
        ...(s.message !== undefined && { message: s.message }),
        lastTransitionAt: s.createdAt,
      },
      metadata: s.metadata,
      entrypoint: s.entrypoint,
      createdAt: s.createdAt,
      ...(s.expiresAt !== undefined && { expiresAt: s.expiresAt }),
      ...(s.image !== undefined && { image: s.image }),
      ...(s.snapshotId !== undefined && { snapshotId: s.snapshotId }),
    };
  }

  #snapshotView(s: FakeSnapshot) {
    return { id: s.id, sandboxId: s.sandboxId, status: { state: s.state }, createdAt: s.createdAt };
  }

  async #execd(
    id: string,
    path: string,
    url: URL,
    req: IncomingMessage,
    body: Buffer,
    res: ServerResponse,
  ): Promise<void> {
    const found = this.sandboxes.get(id);
    // execd is reachable once the runtime has started the sandbox, by the server's clock.
    const sandbox = found === undefined ? undefined : this.#advance(found);
    if (sandbox === undefined || sandbox.state !== 'Running')
      return send(res, 502, { code: 'BAD_GATEWAY', message: 'sandbox not reachable' });
    // The published execd API declares both answers without a body.
    if (path === '/ping') {
      res.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (path === '/command' && req.method === 'POST') {
      const command = parseJson(body) as {
        command?: string;
        cwd?: string;
        timeout?: number;
        envs?: Record<string, string>;
      };
      this.received.commandBodies.push(command);
      if (typeof command.command !== 'string' || command.command === '')
        return send(res, 400, { code: 'INVALID_REQUEST_BODY', message: 'command is required' });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const frame = (event: Record<string, unknown>) =>
        res.write(`${JSON.stringify({ ...event, timestamp: Date.now() })}\n\n`);
      frame({ type: 'init', text: randomUUID() });
      const started = Date.now();
      const result = await this.host.run(id, {
        command: command.command,
        cwd: command.cwd,
        env: { ...sandbox.env, ...command.envs },
        timeoutMs: command.timeout,
        onOutput: (event) => frame({ type: event.stream, text: event.data }),
      });
      if (result.timedOut)
        frame({ type: 'error', error: { ename: 'CommandExecError', evalue: '-1', traceback: [] } });
      else if (result.exitCode === 0)
        frame({ type: 'execution_complete', execution_time: Date.now() - started });
      else
        frame({
          type: 'error',
          error: { ename: 'CommandExecError', evalue: String(result.exitCode), traceback: [] },
        });
      res.end();
      return;
    }
    if (path === '/files/upload' && req.method === 'POST') {
      const form = await formDataOf(req, body);
      const metadata = form.get('metadata');
      const file = form.get('file');
      // execd reads metadata from the multipart files map: a plain field is not seen.
      if (!(metadata instanceof File) || !(file instanceof File))
        return send(res, 400, {
          code: 'INVALID_REQUEST_BODY',
          message: 'metadata and file parts are required',
        });
      const { path: target } = z.object({ path: z.string() }).parse(JSON.parse(await metadata.text()));
      await this.host.write(id, target, new Uint8Array(await file.arrayBuffer()));
      res.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (path === '/files/download' && req.method === 'GET') {
      const content = await this.host.read(id, url.searchParams.get('path') ?? '');
      if (content === undefined) return send(res, 404, { code: 'FILE_NOT_FOUND', message: 'file not found' });
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(content.length),
      });
      res.end(content);
      return;
    }
    if (path === '/directories/list' && req.method === 'GET') {
      const dir = url.searchParams.get('path') ?? '/';
      const entries = await this.host.list(id, dir);
      if (entries === undefined)
        return send(res, 404, { code: 'FILE_NOT_FOUND', message: 'directory not found' });
      return send(
        res,
        200,
        entries.map((e) => ({
          path: `${dir.replace(/\/$/, '')}/${e.name}`,
          type: e.isDir ? 'directory' : 'file',
          size: e.size,
          modified_at: e.modified,
          created_at: e.modified,
          owner: 'root',
          group: 'root',
          mode: 644,
        })),
      );
    }
    send(res, 404, { code: 'NOT_FOUND', message: `no execd route ${path}` });
  }
}

/** FastAPI's own validation error shape (no `{code, message}` here). */
function unprocessable(res: ServerResponse, loc: string[], msg: string): void {
  send(res, 422, { detail: [{ type: 'value_error', loc, msg }] });
}
