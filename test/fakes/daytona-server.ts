import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DaytonaSessions } from './daytona-sessions.ts';
import { FakeProvider, formDataOf, parseJson, sendJson } from './fake-http.ts';

/**
 * A fake Daytona faithful to its published main API and toolbox (../shared/reference/providers/daytona.md):
 * Bearer auth, `/api/sandbox` with cursor paging and a JSON `labels` filter that is eventually consistent,
 * name lookups, 200 (not 201/202) on create with the pre-wait state, 400 for wrong-state actions and 409
 * while a transition is in flight, NestJS error bodies on the API and daemon bodies on the toolbox,
 * `/process/execute` with stdout and stderr merged and 408 on timeout, the toolbox file routes of the
 * published toolbox client (upload-v2, download, list, and the SDK's bulk upload and multipart download),
 * the sessions with stdin (./daytona-sessions.ts), and the auto-stop timer: `autoStopInterval` minutes (15 when left out, 0 never) after the last API,
 * toolbox or `last-activity` call a started sandbox is stopped, measured on the fake's clock (`now`).
 */
interface FakeSandbox {
  id: string;
  name: string;
  state: string;
  desiredState: string;
  pollsLeft: number;
  labels: Record<string, string>;
  env: Record<string, string>;
  snapshot: string;
  createdAt: number;
  errorReason?: string;
  /** Minutes; 0 never. */
  autoStopInterval: number;
  lastActivityAt: number;
  /** Daytona's network limits (docs: network-limits): block everything, or only these IPv4 CIDRs. */
  networkBlockAll: boolean;
  networkAllowList?: string;
}

export class DaytonaFake extends FakeProvider {
  readonly sandboxes = new Map<string, FakeSandbox>();
  /** By name (what sandboxes are created from); each has the id Daytona deletes it by. */
  readonly snapshots = new Map<string, { id: string; name: string; sandbox: string }>();
  readonly received: { createBodies: unknown[] } = { createBodies: [] };
  readonly faults = {
    /** Lists answer every sandbox, whatever the filter asks: the adapter must filter by itself. */
    ignoreListFilter: false,
    /** Listings leave out sandboxes younger than this (ms): the search index lags. */
    listingLagMs: 0,
    failListAfterPages: undefined as number | undefined,
    dropCreateResponse: false,
    /** The next sandbox is accepted, then its runner fails it (state error). */
    nextSandboxErrors: false,
    failCreate: undefined as { status: number; message: string } | undefined,
    down: false,
  };
  /** The toolbox's sessions (stateful shells with stdin), per sandbox. */
  readonly sessions = new DaytonaSessions(this.host);
  readonly #apiKey: string | undefined;
  readonly #now: () => number;

  constructor(options: { apiKey?: string; now?: () => number } = {}) {
    super();
    this.#apiKey = options.apiKey;
    this.#now = options.now ?? Date.now;
  }

  /** Daytona's auto-stop: a started sandbox idle for its interval is stopped (checked as each call arrives). */
  #autoStop(): void {
    const now = this.#now();
    for (const s of this.sandboxes.values()) {
      const idleFor = now - s.lastActivityAt;
      if (s.state === 'started' && s.desiredState === 'started' && s.autoStopInterval > 0) {
        if (idleFor >= s.autoStopInterval * 60_000) {
          Object.assign(s, { state: 'stopped', desiredState: 'stopped' });
          this.sessions.end(s.id);
        }
      }
    }
  }

  override async stop(): Promise<void> {
    this.sessions.endAll();
    await super.stop();
  }

  protected internalError(res: ServerResponse, error: unknown): void {
    this.#apiError(res, 500, String(error), '/');
  }

  #apiError(res: ServerResponse, status: number, message: string, path: string): void {
    sendJson(res, status, {
      statusCode: status,
      error: statusText(status),
      message,
      path,
      timestamp: new Date().toISOString(),
    });
  }

  #toolboxError(
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    path: string,
    method: string,
  ): void {
    sendJson(res, status, {
      statusCode: status,
      message,
      code,
      timestamp: new Date().toISOString(),
      path,
      method,
    });
  }

  #find(idOrName: string): FakeSandbox | undefined {
    return this.sandboxes.get(idOrName) ?? [...this.sandboxes.values()].find((s) => s.name === idOrName);
  }

  /** Transitions settle after a poll, as a runner's do. */
  #advance(s: FakeSandbox): FakeSandbox {
    if (s.state !== s.desiredState && s.pollsLeft-- <= 0) {
      s.state = s.desiredState;
      if (s.state === 'destroyed') this.sandboxes.delete(s.id);
    }
    return s;
  }

  #view(s: FakeSandbox) {
    return {
      id: s.id,
      name: s.name,
      state: s.state,
      desiredState: s.desiredState,
      labels: s.labels,
      env: s.env,
      snapshot: s.snapshot,
      cpu: 1,
      memory: 1,
      disk: 3,
      sandboxClass: 'container',
      toolboxProxyUrl: `${this.url}/toolbox`,
      autoStopInterval: s.autoStopInterval,
      lastActivityAt: new Date(s.lastActivityAt).toISOString(),
      networkBlockAll: s.networkBlockAll,
      ...(s.networkAllowList !== undefined && { networkAllowList: s.networkAllowList }),
      ...(s.errorReason !== undefined && { errorReason: s.errorReason }),
    };
  }

  protected async handle(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    if (this.#apiKey !== undefined && req.headers.authorization !== `Bearer ${this.#apiKey}`) {
      return this.#apiError(res, 401, 'Invalid API key', url.pathname);
    }
    if (this.faults.down) return this.#apiError(res, 503, 'Service Unavailable', url.pathname);
    this.#autoStop();
    if (url.pathname.startsWith('/toolbox/')) return this.#toolbox(req, url, body, res);
    const parts = url.pathname
      .replace(/^\/api\//, '')
      .split('/')
      .filter(Boolean);
    if (parts[0] === 'sandbox' && parts.length === 1 && method === 'POST')
      return this.#create(req, parseJson(body), res);
    if (parts[0] === 'sandbox' && parts.length === 1 && method === 'GET') return this.#list(url, res);
    if (parts[0] === 'snapshots' && parts[1] !== undefined && method === 'GET') {
      // GET takes an id or a name (id first), as Daytona's findOne does.
      const wanted = parts[1];
      const found = [...this.snapshots.values()].find((s) => s.id === wanted) ?? this.snapshots.get(wanted);
      if (found === undefined) return this.#apiError(res, 404, `Snapshot ${wanted} not found`, url.pathname);
      return sendJson(res, 200, { id: found.id, name: found.name, state: 'active', general: false });
    }
    if (parts[0] === 'snapshots' && parts[1] !== undefined && method === 'DELETE') {
      // DELETE takes the id only: a name is not found.
      const found = [...this.snapshots.values()].find((s) => s.id === parts[1]);
      if (found === undefined)
        return this.#apiError(res, 404, `Snapshot ${parts[1]} not found`, url.pathname);
      this.snapshots.delete(found.name);
      return sendJson(res, 200, {});
    }
    if (parts[0] !== 'sandbox' || parts[1] === undefined)
      return this.#apiError(res, 404, 'Not Found', url.pathname);
    const s = this.#find(parts[1]);
    if (s === undefined)
      return this.#apiError(res, 404, `Sandbox with ID or name ${parts[1]} not found`, url.pathname);
    const action = parts[2];
    if (action === undefined && method === 'GET') return sendJson(res, 200, this.#view(this.#advance(s)));
    if (action === undefined && method === 'DELETE') {
      if (s.state !== s.desiredState)
        return this.#apiError(res, 409, 'Sandbox state change in progress', url.pathname);
      Object.assign(s, { state: 'destroying', desiredState: 'destroyed', pollsLeft: 1 });
      this.sessions.end(s.id);
      await this.host.remove(s.id);
      return sendJson(res, 200, this.#view(s));
    }
    const transitions: Record<string, { from: string[]; via: string; to: string }> = {
      start: { from: ['stopped', 'archived', 'paused'], via: 'starting', to: 'started' },
      stop: { from: ['started'], via: 'stopping', to: 'stopped' },
    };
    if (action === 'last-activity' && method === 'POST') {
      s.lastActivityAt = this.#now();
      // NestJS's default for a POST: 201, not the spec's 200.
      res.writeHead(201).end();
      return;
    }
    const move = action === undefined ? undefined : transitions[action];
    if (move !== undefined && method === 'POST') {
      if (s.state !== s.desiredState)
        return this.#apiError(res, 409, 'Sandbox state change in progress', url.pathname);
      if (!move.from.includes(s.state))
        return this.#apiError(res, 400, `Sandbox is not in valid state (${s.state})`, url.pathname);
      // A lifecycle change resets the idle timer; the processes of a stopped sandbox end with it.
      if (action === 'stop') this.sessions.end(s.id);
      Object.assign(s, { state: move.via, desiredState: move.to, pollsLeft: 1, lastActivityAt: this.#now() });
      return sendJson(res, 200, this.#view(s));
    }
    if (action === 'pause' && method === 'POST')
      return this.#apiError(res, 422, 'Pause is not supported for container sandboxes', url.pathname);
    if (action === 'snapshot' && method === 'POST') {
      const { name } = (parseJson(body) ?? {}) as { name?: string };
      if (name === undefined) return this.#apiError(res, 400, 'name should not be empty', url.pathname);
      if (!['started', 'stopped'].includes(s.state))
        return this.#apiError(res, 400, 'Sandbox is not in valid state', url.pathname);
      this.snapshots.set(name, { id: randomUUID(), name, sandbox: s.id });
      await this.host.copy(s.id, `snap-${name}`);
      const back = s.state;
      Object.assign(s, { state: 'snapshotting', desiredState: back, pollsLeft: 1 });
      return sendJson(res, 200, this.#view(s));
    }
    if (action === 'ports' && parts[4] === 'signed-preview-url' && method === 'GET') {
      const seconds = Number(url.searchParams.get('expiresInSeconds') ?? '60');
      if (!(seconds >= 1 && seconds <= 86_400))
        return this.#apiError(res, 400, 'expiresInSeconds out of range', url.pathname);
      const token = randomUUID().slice(0, 8);
      return sendJson(res, 200, {
        sandboxId: s.id,
        port: Number(parts[3]),
        token,
        url: `https://${parts[3]}-${token}.proxy.daytona.example`,
      });
    }
    this.#apiError(res, 404, 'Not Found', url.pathname);
  }

  async #create(req: IncomingMessage, body: unknown, res: ServerResponse): Promise<void> {
    this.received.createBodies.push(body);
    if (this.faults.failCreate !== undefined) {
      const { status, message } = this.faults.failCreate;
      this.faults.failCreate = undefined;
      return this.#apiError(res, status, message, '/api/sandbox');
    }
    const b = (body ?? {}) as Record<string, unknown>;
    if (b.cpu !== undefined || b.memory !== undefined || b.disk !== undefined) {
      return this.#apiError(
        res,
        400,
        'Cannot specify Sandbox resources when using a snapshot',
        '/api/sandbox',
      );
    }
    const id = randomUUID();
    const name = typeof b.name === 'string' ? b.name : id;
    if ([...this.sandboxes.values()].some((s) => s.name === name)) {
      return this.#apiError(res, 409, `Sandbox with name ${name} already exists`, '/api/sandbox');
    }
    const snapshot = typeof b.snapshot === 'string' ? b.snapshot : 'daytona-small';
    if (snapshot.includes('missing'))
      return this.#apiError(res, 400, `Snapshot ${snapshot} not found`, '/api/sandbox');
    const fromSnapshot = this.snapshots.get(snapshot);
    const allowList = typeof b.networkAllowList === 'string' ? b.networkAllowList : undefined;
    const badAllowList = allowList === undefined ? undefined : invalidAllowList(allowList);
    if (badAllowList !== undefined) return this.#apiError(res, 400, badAllowList, '/api/sandbox');
    const s: FakeSandbox = {
      id,
      name,
      state: 'creating',
      desiredState: 'started',
      pollsLeft: 1,
      labels: (b.labels ?? {}) as Record<string, string>,
      env: (b.env ?? {}) as Record<string, string>,
      snapshot,
      createdAt: Date.now(),
      autoStopInterval: typeof b.autoStopInterval === 'number' ? b.autoStopInterval : 15,
      lastActivityAt: this.#now(),
      networkBlockAll: b.networkBlockAll === true,
      ...(allowList !== undefined && allowList !== '' && { networkAllowList: allowList }),
    };
    if (this.faults.nextSandboxErrors) {
      this.faults.nextSandboxErrors = false;
      Object.assign(s, { desiredState: 'error', errorReason: 'runner failed to start the sandbox' });
    }
    this.sandboxes.set(id, s);
    if (fromSnapshot !== undefined) await this.host.copy(`snap-${fromSnapshot.name}`, id);
    else await this.host.dir(id);
    if (this.faults.dropCreateResponse) {
      this.faults.dropCreateResponse = false;
      req.socket.destroy();
      return;
    }
    // The DTO from before the server's own wait: callers must re-GET.
    sendJson(res, 200, this.#view(s));
  }

  #list(url: URL, res: ServerResponse) {
    const limit = Number(url.searchParams.get('limit') ?? '100');
    if (limit < 1 || limit > 200)
      return this.#apiError(res, 400, 'limit must not be greater than 200', '/api/sandbox');
    let filter: Record<string, string> = {};
    const raw = url.searchParams.get('labels');
    if (raw !== null) {
      const parsed = parseJson(Buffer.from(raw));
      if (typeof parsed !== 'object' || parsed === null)
        return this.#apiError(res, 400, 'Invalid labels filter', '/api/sandbox');
      filter = parsed as Record<string, string>;
    }
    const offset = Number(url.searchParams.get('cursor') ?? '0');
    const page = Math.floor(offset / limit) + 1;
    if (this.faults.failListAfterPages !== undefined && page > this.faults.failListAfterPages) {
      this.faults.failListAfterPages = undefined;
      return this.#apiError(res, 500, 'Internal server error', '/api/sandbox');
    }
    const visible = [...this.sandboxes.values()]
      .filter((s) => Date.now() - s.createdAt >= this.faults.listingLagMs)
      .filter(
        (s) => this.faults.ignoreListFilter || Object.entries(filter).every(([k, v]) => s.labels[k] === v),
      )
      .sort((a, b) => b.createdAt - a.createdAt);
    const items = visible.slice(offset, offset + limit).map((s) => this.#view(s));
    sendJson(res, 200, {
      items,
      nextCursor: offset + limit < visible.length ? String(offset + limit) : null,
    });
  }

  async #toolbox(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const [, , id, ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    const s = id === undefined ? undefined : this.sandboxes.get(id);
    if (s === undefined) return this.#toolboxError(res, 404, 'NOT_FOUND', 'sandbox not found', path, method);
    if (s.state !== 'started')
      return this.#toolboxError(res, 409, 'CONFLICT', `sandbox is ${s.state}`, path, method);
    // Toolbox calls reset the idle timer (the processes they start do not).
    s.lastActivityAt = this.#now();
    if (path === '/process/execute' && method === 'POST') {
      const b = (parseJson(body) ?? {}) as {
        command?: string;
        cwd?: string;
        envs?: Record<string, string>;
        timeout?: number;
      };
      if (typeof b.command !== 'string' || b.command.trim() === '') {
        return this.#toolboxError(res, 400, 'BAD_REQUEST', 'command is required', path, method);
      }
      let combined = '';
      const result = await this.host.run(s.id, {
        command: b.command,
        cwd: b.cwd,
        env: { ...s.env, ...b.envs },
        ...(b.timeout !== undefined && b.timeout > 0 && { timeoutMs: b.timeout * 1000 }),
        onOutput: (event) => {
          combined += event.data;
        },
      });
      if (result.timedOut)
        return this.#toolboxError(res, 408, 'REQUEST_TIMEOUT', 'command timed out', path, method);
      return sendJson(res, 200, { exitCode: result.exitCode, result: combined });
    }
    const served = await this.sessions.handle(s, req, path, body, res, (status, code, message) =>
      this.#toolboxError(res, status, code, message, path, method),
    );
    if (served) return;
    const target = url.searchParams.get('path') ?? '/';
    // The current daemon's upload: multipart field `file`, or the raw body; answers the UploadedFile
    // (name, path, type). The old /files/upload is not served (the published toolbox client no longer has it).
    if (path === '/files/upload-v2' && method === 'POST') {
      const multipart = (req.headers['content-type'] ?? '').startsWith('multipart/form-data');
      let content: Uint8Array;
      if (multipart) {
        const file = (await formDataOf(req, body)).get('file');
        if (!(file instanceof File))
          return this.#toolboxError(res, 400, 'BAD_REQUEST', 'file is required', path, method);
        content = new Uint8Array(await file.arrayBuffer());
      } else {
        content = new Uint8Array(body);
      }
      await this.host.write(s.id, target, content);
      return sendJson(res, 200, { name: target.split('/').pop() ?? '', path: target, type: 'file' });
    }
    // The SDK's own uploads: `files[i].path` and `files[i].file` parts, any number of them.
    if (path === '/files/bulk-upload' && method === 'POST') {
      const form = await formDataOf(req, body);
      for (let i = 0; form.has(`files[${i}].path`); i++) {
        const destination = form.get(`files[${i}].path`);
        const file = form.get(`files[${i}].file`);
        if (typeof destination !== 'string' || !(file instanceof File))
          return this.#toolboxError(
            res,
            400,
            'BAD_REQUEST',
            `files[${i}] needs a path and a file`,
            path,
            method,
          );
        await this.host.write(s.id, destination, new Uint8Array(await file.arrayBuffer()));
      }
      res.writeHead(200).end();
      return;
    }
    // The SDK's own downloads: a multipart answer, a `file` part per path (named by it) or an `error` part.
    if (path === '/files/bulk-download' && method === 'POST') {
      const { paths } = (parseJson(body) ?? {}) as { paths?: unknown };
      if (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string'))
        return this.#toolboxError(res, 400, 'BAD_REQUEST', 'paths must be a list of strings', path, method);
      const form = new FormData();
      for (const source of paths as string[]) {
        const content = await this.host.read(s.id, source);
        if (content === undefined)
          form.append(
            'error',
            new Blob([JSON.stringify({ message: 'file not found', statusCode: 404, code: 'NOT_FOUND' })], {
              type: 'application/json',
            }),
            source,
          );
        else
          form.append(
            'file',
            new Blob([new Uint8Array(content)], { type: 'application/octet-stream' }),
            source,
          );
      }
      const answer = new Response(form);
      res.writeHead(200, { 'content-type': answer.headers.get('content-type') ?? 'multipart/form-data' });
      res.end(Buffer.from(await answer.arrayBuffer()));
      return;
    }
    if (path === '/files/download' && method === 'GET') {
      const content = await this.host.read(s.id, target);
      if (content === undefined) {
        // Daemon file errors can come with a status and an empty body.
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(content);
      return;
    }
    if (path === '/files' && method === 'GET') {
      const entries = await this.host.list(s.id, target);
      if (entries === undefined)
        return this.#toolboxError(res, 404, 'NOT_FOUND', 'directory not found', path, method);
      return sendJson(
        res,
        200,
        entries.map((e) => ({
          name: e.name,
          isDir: e.isDir,
          size: e.size,
          mode: '0644',
          permissions: '-rw-r--r--',
          owner: 'daytona',
          group: 'daytona',
          modifiedAt: e.modified,
        })),
      );
    }
    this.#toolboxError(res, 404, 'NOT_FOUND', `no toolbox route ${path}`, path, method);
  }
}

function statusText(status: number): string {
  return (
    {
      400: 'Bad Request',
      401: 'Unauthorized',
      404: 'Not Found',
      409: 'Conflict',
      422: 'Unprocessable Entity',
      429: 'Too Many Requests',
      500: 'Internal Server Error',
      503: 'Service Unavailable',
    }[status] ?? 'Error'
  );
}

/**
 * Daytona's rule for networkAllowList (network-limits): comma-separated IPv4 CIDRs, each with its /N, at
 * most 10; hostnames and IPv6 are refused. Undefined when the list is valid.
 */
function invalidAllowList(list: string): string | undefined {
  if (list === '') return undefined;
  const entries = list.split(',').map((entry) => entry.trim());
  if (entries.length > 10) return 'networkAllowList takes at most 10 CIDR blocks';
  for (const entry of entries) {
    const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(entry);
    if (match === null || match.slice(1, 5).some((octet) => Number(octet) > 255) || Number(match[5]) > 32)
      return `networkAllowList: ${entry} is not an IPv4 CIDR block (a.b.c.d/N)`;
  }
  return undefined;
}
