import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FakeProvider, parseJson, sendJson } from './fake-http.ts';

/**
 * A fake Freestyle v5 faithful to its published client (../shared/reference/providers/freestyle.md):
 * Bearer auth, `{code, message}` errors, the background-request protocol (202 plus a request id, polled
 * at /v5/background-requests/{id}), create requiring a firewall, slugs that conflict with 409, limit and
 * offset paging with a `key:value` metadata filter, grow-only resize, exec-await with base64 stdin and a
 * null statusCode on timeout, raw-byte files, snapshots usable as soon as they return.
 */
interface FakeVm {
  id: string;
  slug: string;
  state: string;
  next?: string;
  metadata: Record<string, string>;
  resources: { cpu: number; memory: number; storage: number };
  ttlSeconds?: number;
  createdAt: string;
}

/** Stand-in for the limit on a background request's stored result (Freestyle does not publish it). */
const backgroundResultMaxBytes = 1024 * 1024;

const slugPattern = /^[a-z0-9-]{1,63}$/;
const sizes: Record<string, FakeVm['resources']> = {
  'freestyle/ubuntu-sm': { cpu: 2, memory: 4096, storage: 16_384 },
  'freestyle/ubuntu': { cpu: 4, memory: 8192, storage: 32_768 },
};

export class FreestyleFake extends FakeProvider {
  readonly vms = new Map<string, FakeVm>();
  readonly snapshots = new Map<
    string,
    { id: string; sourceVmId: string; resources: FakeVm['resources']; createdAt: string }
  >();
  readonly tlsRules: unknown[] = [];
  readonly uploads = new Map<
    string,
    {
      path: string;
      mode: number | undefined;
      size: number;
      sha256: string | undefined;
      data: Buffer;
      received: number;
    }
  >();
  readonly received: { createBodies: unknown[]; execBodies: unknown[]; resizeBodies: unknown[] } = {
    createBodies: [],
    execBodies: [],
    resizeBodies: [],
  };
  readonly faults = {
    /** Lists answer every sandbox, whatever the filter asks: the adapter must filter by itself. */
    ignoreListFilter: false,
    failListOffset: undefined as number | undefined,
    dropCreateResponse: false,
    failCreate: undefined as { status: number; code: string } | undefined,
    down: false,
    /** The next background poll answers 503 without the request-id header (a failed hop). */
    flakyPoll: false,
  };
  readonly #background = new Map<string, { polls: number; status: number; body: unknown }>();
  readonly #apiKey: string | undefined;

  /**
   * `linuxUser`: the account commands run as when an exec names none. Freestyle's default is the image's
   * uid-1000 account (root only in an image without one), so that is the fake's default: on a root host
   * its commands really run as uid 1000, and files the API writes are root's with the mode asked for
   * (0600 when new and none is given, as Freestyle documents).
   */
  constructor(options: { apiKey?: string; linuxUser?: 'user' | 'root' } = {}) {
    super(options.linuxUser === 'root' ? {} : { guestUser: { uid: 1000, gid: 1000 } });
    this.#apiKey = options.apiKey;
  }

  protected internalError(res: ServerResponse, error: unknown): void {
    sendJson(res, 500, { code: 'INTERNAL_ERROR', message: String(error) });
  }

  #find(idOrSlug: string): FakeVm | undefined {
    return this.vms.get(idOrSlug) ?? [...this.vms.values()].find((vm) => vm.slug === idOrSlug);
  }

  #advance(vm: FakeVm): FakeVm {
    if (vm.next !== undefined) {
      vm.state = vm.next;
      vm.next = undefined;
    }
    return vm;
  }

  #view(vm: FakeVm) {
    return {
      id: vm.id,
      state: vm.state,
      slug: vm.slug,
      metadata: vm.metadata,
      resources: vm.resources,
      snapshotId: null,
      createdAt: vm.createdAt,
      ...(vm.ttlSeconds !== undefined && { ttlSeconds: vm.ttlSeconds }),
    };
  }

  /** Slow operations go to the background when the client opted in: 202 now, the answer on a later poll. */
  #maybeBackground(req: IncomingMessage, res: ServerResponse, status: number, body: unknown) {
    if (req.headers['x-freestyle-background-after-secs'] === undefined) return sendJson(res, status, body);
    const id = randomUUID();
    this.#background.set(id, { polls: 1, status, body });
    sendJson(
      res,
      202,
      { requestId: id, resultUrl: `/v5/background-requests/${id}` },
      { 'x-freestyle-background-request-id': id },
    );
  }

  protected async handle(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    if (this.#apiKey !== undefined) {
      const auth = req.headers.authorization;
      if (auth === undefined)
        return sendJson(res, 401, { code: 'MISSING_CREDENTIALS', message: 'missing credentials' });
      if (auth !== `Bearer ${this.#apiKey}`)
        return sendJson(res, 401, { code: 'INVALID_API_KEY', message: 'invalid API key' });
    }
    if (this.faults.down)
      return sendJson(res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'try again later' });
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] !== 'v5') return sendJson(res, 404, { code: 'NOT_FOUND', message: 'not found' });
    const [, head, id, action, sub] = parts;
    if (head === 'background-requests' && id !== undefined) {
      if (this.faults.flakyPoll) {
        this.faults.flakyPoll = false;
        return sendJson(res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'poll hop failed' });
      }
      const pending = this.#background.get(id);
      if (pending === undefined)
        return sendJson(res, 404, { code: 'NOT_FOUND', message: 'no such background request' });
      if (pending.polls-- > 0)
        return sendJson(res, 202, { requestId: id }, { 'x-freestyle-background-request-id': id });
      this.#background.delete(id);
      return sendJson(res, pending.status, pending.body);
    }
    if (head === 'vms' && id === undefined && method === 'POST')
      return this.#create(req, parseJson(body), res);
    if (head === 'vms' && id === undefined && method === 'GET') return this.#list(url, res);
    if (head === 'tls' && method === 'POST') {
      this.tlsRules.push(parseJson(body));
      return sendJson(res, 200, { id: randomUUID() });
    }
    if (head === 'snapshots' && id !== undefined && method === 'GET') {
      const snapshot = this.snapshots.get(id);
      if (snapshot === undefined)
        return sendJson(res, 404, { code: 'NOT_FOUND', message: 'snapshot not found' });
      // SnapshotData (v5 src/vms/snapshots.ts): a private snapshot without slug, label or timers.
      return sendJson(res, 200, {
        id: snapshot.id,
        sourceVmId: snapshot.sourceVmId,
        slug: null,
        displayName: null,
        public: false,
        createdAt: snapshot.createdAt,
        updatedAt: snapshot.createdAt,
      });
    }
    if (head === 'snapshots' && id !== undefined && method === 'DELETE') {
      if (!this.snapshots.delete(id))
        return sendJson(res, 404, { code: 'NOT_FOUND', message: 'snapshot not found' });
      return sendJson(res, 200, {});
    }
    if (head !== 'vms' || id === undefined)
      return sendJson(res, 404, { code: 'NOT_FOUND', message: 'not found' });
    const vm = this.#find(id);
    if (vm === undefined) return sendJson(res, 404, { code: 'NOT_FOUND', message: `vm ${id} not found` });
    if (action === undefined && method === 'GET') return sendJson(res, 200, this.#view(this.#advance(vm)));
    if (action === undefined && method === 'PATCH') {
      const patch = (parseJson(body) ?? {}) as { ttlSeconds?: number };
      if (patch.ttlSeconds !== undefined) vm.ttlSeconds = patch.ttlSeconds;
      return sendJson(res, 200, this.#view(vm));
    }
    if (action === undefined && method === 'DELETE') {
      this.vms.delete(vm.id);
      await this.host.remove(vm.id);
      res.writeHead(200).end();
      return;
    }
    if (action === 'start' && method === 'POST') {
      if (vm.state === 'running') return sendJson(res, 200, this.#view(vm));
      Object.assign(vm, { state: 'starting', next: 'running' });
      return this.#maybeBackground(req, res, 200, this.#view(vm));
    }
    if (action === 'pause' && method === 'POST') {
      if (vm.state !== 'running')
        return sendJson(res, 409, { code: 'CONFLICT', message: `vm is ${vm.state}` });
      Object.assign(vm, { state: 'pausing', next: 'paused' });
      return sendJson(res, 200, this.#view(vm));
    }
    if (action === 'resize' && method === 'POST') {
      const grow = (parseJson(body) ?? {}) as Partial<FakeVm['resources']>;
      this.received.resizeBodies.push(grow);
      for (const [key, value] of Object.entries(grow)) {
        if (value < vm.resources[key as keyof FakeVm['resources']])
          return sendJson(res, 400, { code: 'BAD_REQUEST', message: `${key} can only grow` });
        if (key !== 'storage' && (value & (value - 1)) !== 0)
          return sendJson(res, 400, { code: 'BAD_REQUEST', message: `${key} must be a power of two` });
      }
      Object.assign(vm.resources, grow);
      return sendJson(res, 200, this.#view(vm));
    }
    if (action === 'exec-await' && method === 'POST') return this.#exec(vm, parseJson(body), res);
    if (action === 'snapshot' && method === 'POST') {
      if (vm.state !== 'running' && vm.state !== 'paused')
        return sendJson(res, 409, { code: 'CONFLICT', message: `vm is ${vm.state}` });
      const snapshotId = `sh-${randomUUID().slice(0, 12)}`;
      this.snapshots.set(snapshotId, {
        id: snapshotId,
        sourceVmId: vm.id,
        resources: { ...vm.resources },
        createdAt: new Date().toISOString(),
      });
      await this.host.copy(vm.id, `snap-${snapshotId}`);
      return this.#maybeBackground(req, res, 200, {
        snapshotId,
        sourceVmId: vm.id,
        snapshot: { id: snapshotId },
      });
    }
    if (action === 'fs') return this.#fs(vm, sub, url, body, method, res, req);
    sendJson(res, 404, { code: 'NOT_FOUND', message: 'not found' });
  }

  async #create(req: IncomingMessage, body: unknown, res: ServerResponse): Promise<void> {
    this.received.createBodies.push(body);
    if (this.faults.failCreate !== undefined) {
      const { status, code } = this.faults.failCreate;
      this.faults.failCreate = undefined;
      return sendJson(res, status, { code, message: `injected ${code}` });
    }
    const b = (body ?? {}) as Record<string, unknown>;
    if (
      typeof b.firewall !== 'object' ||
      b.firewall === null ||
      !Array.isArray((b.firewall as { rules?: unknown }).rules)
    ) {
      return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'firewall is required' });
    }
    const slug = typeof b.slug === 'string' ? b.slug : undefined;
    if (slug !== undefined && !slugPattern.test(slug))
      return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'invalid slug' });
    if (slug !== undefined && this.#find(slug) !== undefined)
      return sendJson(res, 409, { code: 'CONFLICT', message: 'slug already taken' });
    const metadata = (b.metadata ?? {}) as Record<string, string>;
    if (Object.entries(metadata).some(([k, v]) => k.length > 63 || v.length > 63)) {
      return sendJson(res, 400, {
        code: 'BAD_REQUEST',
        message: 'metadata keys and values are at most 63 characters',
      });
    }
    const source = typeof b.snapshotId === 'string' ? b.snapshotId : 'freestyle/ubuntu';
    const snapshot = this.snapshots.get(source);
    const resources = snapshot?.resources ?? sizes[source];
    if (resources === undefined)
      return sendJson(res, 404, { code: 'NOT_FOUND', message: `snapshot ${source} not found` });
    const vm: FakeVm = {
      id: randomUUID(),
      slug: slug ?? randomUUID().slice(0, 8),
      state: 'starting',
      next: 'running',
      metadata,
      resources: { ...resources },
      createdAt: new Date().toISOString(),
      ...(typeof b.ttlSeconds === 'number' && { ttlSeconds: b.ttlSeconds }),
    };
    this.vms.set(vm.id, vm);
    if (snapshot !== undefined) await this.host.copy(`snap-${snapshot.id}`, vm.id);
    else await this.host.dir(vm.id);
    if (this.faults.dropCreateResponse) {
      this.faults.dropCreateResponse = false;
      req.socket.destroy();
      return;
    }
    this.#maybeBackground(req, res, 200, { ...this.#view(vm), firewallRules: [], tlsRules: [] });
  }

  #list(url: URL, res: ServerResponse) {
    const limit = Number(url.searchParams.get('limit') ?? '50');
    const offset = Number(url.searchParams.get('offset') ?? '0');
    if (this.faults.failListOffset !== undefined && offset >= this.faults.failListOffset) {
      this.faults.failListOffset = undefined;
      return sendJson(res, 500, { code: 'INTERNAL_ERROR', message: 'listing failed' });
    }
    const filter = (url.searchParams.get('metadata') ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf(':')), pair.slice(pair.indexOf(':') + 1)] as const);
    const all = [...this.vms.values()].filter(
      (vm) => this.faults.ignoreListFilter || filter.every(([k, v]) => vm.metadata[k] === v),
    );
    const count = (state: string) => all.filter((vm) => vm.state === state).length;
    sendJson(res, 200, {
      vms: all.slice(offset, offset + limit).map((vm) => this.#view(vm)),
      totalCount: all.length,
      runningCount: count('running'),
      startingCount: count('starting'),
      pausingCount: count('pausing'),
      pausedCount: count('paused'),
      stoppedCount: count('stopped'),
    });
  }

  async #exec(vm: FakeVm, body: unknown, res: ServerResponse): Promise<void> {
    this.received.execBodies.push(body);
    if (vm.state === 'paused') vm.state = 'running'; // exec wakes a paused VM
    if (vm.state !== 'running') return sendJson(res, 409, { code: 'CONFLICT', message: `vm is ${vm.state}` });
    const b = (body ?? {}) as {
      command?: string;
      timeoutMs?: number;
      env?: Record<string, string>;
      stdin?: string;
      linuxUser?: string;
    };
    if (typeof b.command !== 'string')
      return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'command is required' });
    const timeoutMs = b.timeoutMs ?? 30_000;
    if (timeoutMs > 300_000)
      return sendJson(res, 400, {
        code: 'AGENT_UNSUPPORTED',
        message: 'timeouts above 300000 ms need the resumable exec agent',
      });
    if (/\bpoweroff\b/.test(b.command)) {
      vm.next = 'stopped';
      return sendJson(res, 200, { stdout: '', stderr: '', statusCode: 0 });
    }
    const result = await this.host.run(vm.id, {
      command: b.command,
      asRoot: b.linuxUser === 'root',
      env: b.env,
      stdin: b.stdin === undefined ? undefined : Buffer.from(b.stdin, 'base64').toString('utf8'),
      timeoutMs,
    });
    sendJson(res, 200, {
      stdout: result.stdout,
      stderr: result.stderr,
      statusCode: result.timedOut ? null : result.exitCode,
    });
  }

  /** The resumable upload: create with path, size and sha256; chunks at offsets; commit checks the whole. */
  async #upload(vm: FakeVm, url: URL, body: Buffer, method: string, res: ServerResponse): Promise<void> {
    const parts = url.pathname.split('/').filter(Boolean);
    const uploadId = parts[5];
    if (uploadId === undefined && method === 'POST') {
      const b = (parseJson(body) ?? {}) as { path?: string; size?: number; sha256?: string; mode?: number };
      if (typeof b.path !== 'string' || typeof b.size !== 'number') {
        return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'path and size are required' });
      }
      const id = randomUUID();
      this.uploads.set(id, {
        path: b.path,
        mode: b.mode,
        size: b.size,
        sha256: b.sha256,
        data: Buffer.alloc(b.size),
        received: 0,
      });
      return sendJson(res, 200, { uploadId: id, receivedBytes: 0 });
    }
    const upload = uploadId === undefined ? undefined : this.uploads.get(uploadId);
    if (upload === undefined || uploadId === undefined)
      return sendJson(res, 404, { code: 'NOT_FOUND', message: 'no such upload' });
    if (parts[6] === undefined && method === 'PUT') {
      const offset = Number(url.searchParams.get('offset') ?? 'NaN');
      if (!Number.isInteger(offset) || offset + body.length > upload.size) {
        return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'bad offset' });
      }
      body.copy(upload.data, offset);
      upload.received += body.length;
      return sendJson(res, 200, { receivedBytes: upload.received });
    }
    if (parts[6] === 'commit' && method === 'POST') {
      const digest = createHash('sha256').update(upload.data).digest('hex');
      if (upload.sha256 !== undefined && upload.sha256 !== digest) {
        return sendJson(res, 409, { code: 'CONFLICT', message: 'sha256 mismatch' });
      }
      await this.host.write(
        vm.id,
        upload.path,
        new Uint8Array(upload.data),
        await this.#modeFor(vm, upload.path, upload.mode),
      );
      this.uploads.delete(uploadId);
      return sendJson(res, 200, {});
    }
    sendJson(res, 404, { code: 'NOT_FOUND', message: 'not found' });
  }

  /** The mode asked for, else the existing file's, else 0600. */
  async #modeFor(vm: FakeVm, path: string, asked: string | number | null | undefined): Promise<number> {
    if (asked !== null && asked !== undefined && asked !== '') return Number(asked);
    return (await this.host.modeOf(vm.id, path)) ?? 0o600;
  }

  async #fs(
    vm: FakeVm,
    op: string | undefined,
    url: URL,
    body: Buffer,
    method: string,
    res: ServerResponse,
    req: IncomingMessage,
  ): Promise<void> {
    const path = url.searchParams.get('path') ?? '';
    if (op === 'uploads') return this.#upload(vm, url, body, method, res);
    if (op === 'mkdir' && method === 'POST') {
      const target = ((parseJson(body) ?? {}) as { path?: string }).path ?? '';
      await this.host.write(vm.id, `${target}/.keep`, new Uint8Array());
      return sendJson(res, 200, {});
    }
    if (!path.startsWith('/') || path.includes('..'))
      return sendJson(res, 400, { code: 'BAD_REQUEST', message: 'paths must be absolute' });
    if (op === 'read' && method === 'GET') {
      const content = await this.host.read(vm.id, path);
      if (content === undefined) return sendJson(res, 404, { code: 'NOT_FOUND', message: 'file not found' });
      // A read that opted into the background protocol has its bytes stored as the request's result,
      // which has a size limit (not published; 1 MiB stands in): the poll then answers the stored error
      // BACKGROUND_RESULT_UNSTORABLE, as Freestyle's client expects it. Its own reads never opt in.
      if (
        req.headers['x-freestyle-background-after-secs'] !== undefined &&
        content.length > backgroundResultMaxBytes
      ) {
        return this.#maybeBackground(req, res, 500, {
          code: 'BACKGROUND_RESULT_UNSTORABLE',
          message: 'background request result too large to store',
        });
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(content);
      return;
    }
    if (op === 'write' && method === 'PUT') {
      if (body.length > 8 * 1024 * 1024)
        return sendJson(res, 413, { code: 'PAYLOAD_TOO_LARGE', message: 'use uploads' });
      const sha256 = url.searchParams.get('sha256');
      if (sha256 !== null && createHash('sha256').update(body).digest('hex') !== sha256)
        return sendJson(res, 400, { code: 'CHECKSUM_MISMATCH', message: 'body does not match sha256' });
      await this.host.write(
        vm.id,
        path,
        new Uint8Array(body),
        await this.#modeFor(vm, path, url.searchParams.get('mode')),
      );
      return sendJson(res, 200, {});
    }
    if (op === 'dir' && method === 'GET') {
      const entries = await this.host.list(vm.id, path);
      if (entries === undefined)
        return sendJson(res, 404, { code: 'NOT_FOUND', message: 'directory not found' });
      return sendJson(res, 200, {
        entries: entries
          .filter((e) => e.name !== '.keep')
          .map((e) => ({ name: e.name, kind: e.isDir ? 'directory' : 'file' })),
      });
    }
    sendJson(res, 404, { code: 'NOT_FOUND', message: 'not found' });
  }
}
