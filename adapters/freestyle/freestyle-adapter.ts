/**
 * Freestyle VMs through the v5 API (adapter specification section 9; ../shared/reference/providers/
 * freestyle.md). Hardware-virtualised microVMs; every call opts into the background-request protocol
 * (a slow call answers 202 and is polled); create requires a firewall, which is closed unless the pool
 * sets egress: public.
 */

import { createHash } from 'node:crypto';
import { unboundedCapacity } from '../../lib/adapter/capacity.ts';
import { adapterErrors } from '../../lib/adapter/errors.ts';
import {
  type AdapterInfo,
  adapterProtocolVersion,
  type CallOptions,
  type Capabilities,
  type Capacity,
  type CreateRequest,
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type Instance,
  type InstanceState,
  type Lifecycle,
  type Pauser,
  type PortExposer,
  type SnapshotInfo,
  type Snapshotter,
  type TtlExtender,
} from '../../lib/adapter/port.ts';
import { isApiError } from '../../lib/errors.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import * as z from '../../lib/zod.ts';
import { maxDownloadBytes, readBounded } from '../httpx/bounded-body.ts';
import { HttpClient, type RequestOptions } from '../httpx/http-client.ts';
import { shellQuote } from '../httpx/shell-quote.ts';
import { sleep } from '../httpx/sleep.ts';
import type { FreestyleConfig } from './config.ts';

const metadataKeys = { sandboxId: 'dly-sandbox-id', installation: 'dly-installation' };
/**
 * Where the sandbox's env lives in the guest: written at create, sourced by every exec. Commands run as
 * the image's uid-1000 account when it has one (Freestyle's default), the API writes as root: the file
 * must be readable by every account in the guest, all of which are the tenant's.
 */
const envFile = '/etc/differently/env';
/** Files Differently writes (the env file and the tenant's own) are readable by any guest account. */
const writtenFileMode = 0o644;
/** exec-await's ceiling without the resumable-exec agent. */
const maxExecMs = 300_000;
const backgroundHeader = 'x-freestyle-background-request-id';
const backgroundAfterHeader = 'x-freestyle-background-after-secs';
/** fs/write takes at most 8 MiB; larger files use the resumable upload, in chunks of this size. */
const maxSimpleWriteBytes = 8 * 1024 * 1024;
const uploadChunkBytes = 8 * 1024 * 1024;
/** Provider codes that mean this one VM failed, not the platform. */
const perVmFailures: ReadonlySet<string> = new Set([
  'VM_SETUP_FAILED',
  'VM_START_TIMEOUT',
  'VM_SIZE_LIMIT_EXCEEDED',
]);

const vmSchema = z.object({
  id: z.string().check(z.minLength(1)),
  state: z.string(),
  slug: z.nullish(z.string()),
  metadata: z.nullish(z.record(z.string(), z.string())),
  resources: z.nullish(z.partial(z.object({ cpu: z.number(), memory: z.number(), storage: z.number() }))),
  createdAt: z.nullish(z.string()),
});
type Vm = z.infer<typeof vmSchema>;
const listSchema = z.object({ vms: z.array(vmSchema), totalCount: z.int() });
const execSchema = z.object({
  stdout: z.nullish(z.string()),
  stderr: z.nullish(z.string()),
  statusCode: z.nullable(z.int()),
});
const dirSchema = z.object({ entries: z.array(z.object({ name: z.string(), kind: z.string() })) });

/** A slug is 1-63 of [a-z0-9-]: derived from the sandbox id so a repeat Create finds the same VM. */
export function slugOf(sandboxId: string): string {
  return `dly-${sandboxId.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`.slice(0, 63);
}

export function freestyleStateOf(state: string): InstanceState {
  switch (state) {
    case 'running':
      return 'running';
    case 'paused':
      return 'paused';
    case 'stopped':
      return 'stopped';
    default:
      // starting, pausing, and states added later.
      return 'pending';
  }
}

/** The smallest power of two at least `value` (Freestyle sizes cpu and memory in powers of two). */
export function powerOfTwoAtLeast(value: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, value)));
}

export class FreestyleAdapter
  implements ExecutionAdapter, FileSystem, Lifecycle, Pauser, Snapshotter, PortExposer, TtlExtender
{
  readonly #config: FreestyleConfig;
  readonly #http: HttpClient;

  constructor(config: FreestyleConfig, apiKey?: string, fetchImpl?: typeof fetch) {
    this.#config = config;
    this.#http = new HttpClient({
      provider: 'freestyle',
      baseUrl: config.apiURL,
      headers: { ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }) },
      secrets: apiKey === undefined ? [] : [apiKey],
      timeoutMs: 10 * 60 * 1000,
      ...(fetchImpl !== undefined && { fetch: fetchImpl }),
    });
  }

  info(): AdapterInfo {
    return {
      kind: 'freestyle',
      version: '5',
      trust: 'external',
      isolation: 'hardware-virtualised microVM (provider-managed)',
      protocol: adapterProtocolVersion,
      isolationVerified: false,
      limitations: [
        "resources are grown with resize after boot (grow only, powers of two); a VM never shrinks below its snapshot's size",
        'exec runs at most 300 s; a longer timeout is capped; there is no cwd field (the command is prefixed with cd)',
        'no stop API: stop runs poweroff in the guest and waits for stopped',
        'snapshots always capture memory and disk and are reported as kind memory',
        `port URLs are public TLS rules on <port>-<slug>.${this.#config.domain}: anyone with the URL can connect`,
        ...(this.#config.egress === 'none'
          ? ['no outbound network (firewall deny-all)']
          : ['outbound network open (egress: public)']),
      ],
    };
  }

  async capabilities(): Promise<Capabilities> {
    return {
      features: [
        'exec',
        'files',
        'lifecycle.stop-start',
        'persistence.disk',
        'lifecycle.pause-resume',
        'snapshots.disk',
        'snapshots.memory',
        'fork',
        'ports.expose',
        'network.egress-control',
        'isolation.microvm',
      ],
      maxCPU: 32,
      maxMemoryMiB: 64 * 1024,
      maxDiskGiB: 256,
      templates: [],
      regions: [],
    };
  }

  async capacity(): Promise<Capacity> {
    return unboundedCapacity();
  }

  async health(opts?: CallOptions): Promise<void> {
    await this.#call('GET', '/v5/vms', listSchema, {
      query: { limit: 1 },
      signal: opts?.signal,
      idempotent: true,
    });
  }

  /**
   * One call through the background-request protocol: a 202 with the request-id header is polled at
   * /v5/background-requests/{id} until it answers something other than 202, which is the call's real
   * answer. Poll hops that fail transiently (408/429/5xx without the header) are retried.
   */
  async #send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    let response = await this.#http.request(method, path, {
      ...options,
      // Slow calls answer 202 after 5 s and are polled instead of holding the connection.
      headers: { [backgroundAfterHeader]: '5', ...options.headers },
      accept: [202, ...(options.accept ?? [])],
    });
    const id = response.status === 202 ? response.headers.get(backgroundHeader) : null;
    if (id === null) return response;
    await response.body?.cancel();
    const deadline = Date.now() + 30 * 60 * 1000;
    for (;;) {
      await sleep(this.#config.pollIntervalMs, options.signal);
      try {
        response = await this.#http.request('GET', `/v5/background-requests/${encodeURIComponent(id)}`, {
          signal: options.signal,
          accept: [202, ...(options.accept ?? [])],
        });
      } catch (error) {
        const status = isApiError(error) ? error.details.status : undefined;
        if (typeof status === 'number' && [408, 429, 502, 503, 504].includes(status) && Date.now() < deadline)
          continue;
        throw error;
      }
      if (response.status !== 202) return response;
      await response.body?.cancel();
      if (Date.now() > deadline)
        throw this.#http.unavailable(`background request ${id} did not finish in 30 minutes`);
    }
  }

  async #call<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    options: RequestOptions = {},
  ): Promise<z.infer<S>> {
    return this.#http.parse(await this.#send(method, path, options), schema, `${method} ${path}`);
  }

  async #getRaw(ref: string, opts?: CallOptions): Promise<Vm> {
    return this.#call('GET', `/v5/vms/${encodeURIComponent(ref)}`, vmSchema, {
      signal: opts?.signal,
      idempotent: true,
    });
  }

  async create(req: CreateRequest, opts?: CallOptions): Promise<Instance> {
    const slug = slugOf(req.id);
    let vm: Vm;
    try {
      vm = await this.#call('POST', '/v5/vms', vmSchema, {
        json: this.createBody(req),
        signal: opts?.signal,
      });
    } catch (error) {
      // This one VM failed to set up or boot: the platform is fine, so the scheduler retries without blaming the pool.
      if (isApiError(error) && perVmFailures.has(String(error.details.providerCode))) {
        throw adapterErrors.sandboxFailed(error.message, { providerCode: error.details.providerCode });
      }
      // 409 is a taken slug (our earlier attempt) or no capacity: the slug tells them apart.
      if (!(isApiError(error) && error.code === 'invalid_state')) throw error;
      const existing = await this.#getRaw(slug, opts).catch(() => undefined);
      if (existing?.metadata?.[metadataKeys.sandboxId] !== req.id) {
        throw adapterErrors.insufficientCapacity(`freestyle: no capacity for a new VM (${error.message})`);
      }
      vm = existing;
    }
    vm = await this.#waitFor(vm.id, ['running'], opts);
    await this.#grow(vm, req, opts);
    await this.writeFile(vm.id, envFile, new TextEncoder().encode(envScript(req.env)), opts);
    return { ref: vm.id, sandboxId: req.id, state: 'running' };
  }

  createBody(req: CreateRequest): Record<string, unknown> {
    return {
      snapshotId: req.fromSnapshot ?? req.template ?? this.#config.snapshot,
      slug: slugOf(req.id),
      metadata: { [metadataKeys.sandboxId]: req.id, [metadataKeys.installation]: req.installation },
      // Required: deny-all unless the pool opens outbound traffic.
      firewall: {
        rules:
          this.#config.egress === 'public'
            ? [{ action: 'allow', source: {}, destination: { public: true } }]
            : [],
      },
      ...(req.ttlSeconds !== undefined && { ttlSeconds: req.ttlSeconds }),
    };
  }

  /** Resize after boot: grow only, powers of two for cpu and memory; never below the snapshot's size. */
  async #grow(vm: Vm, req: CreateRequest, opts?: CallOptions): Promise<void> {
    const current = vm.resources ?? {};
    const want = {
      cpu: powerOfTwoAtLeast(req.resources.cpu),
      memory: powerOfTwoAtLeast(req.resources.memoryMiB),
      storage: req.resources.diskGiB * 1024,
    };
    const grow = Object.fromEntries(
      Object.entries(want).filter(
        ([key, value]) => value > (current[key as keyof typeof current] ?? Number.POSITIVE_INFINITY),
      ),
    );
    if (Object.keys(grow).length === 0) return;
    await this.#call('POST', `/v5/vms/${encodeURIComponent(vm.id)}/resize`, vmSchema, {
      json: grow,
      signal: opts?.signal,
    });
  }

  async #waitFor(ref: string, targets: string[], opts?: CallOptions): Promise<Vm> {
    const deadline = Date.now() + this.#config.readyTimeoutSeconds * 1000;
    for (;;) {
      const vm = await this.#getRaw(ref, opts);
      if (targets.includes(vm.state)) return vm;
      if (Date.now() > deadline) {
        throw adapterErrors.sandboxFailed(
          `freestyle: VM ${ref} did not reach ${targets.join(' or ')} in ${this.#config.readyTimeoutSeconds} s (still ${vm.state})`,
        );
      }
      await sleep(this.#config.pollIntervalMs, opts?.signal);
    }
  }

  async get(ref: string, opts?: CallOptions): Promise<Instance> {
    return this.#instanceOf(await this.#getRaw(ref, opts));
  }

  #instanceOf(vm: Vm): Instance {
    return {
      ref: vm.id,
      sandboxId: vm.metadata?.[metadataKeys.sandboxId] ?? '',
      state: freestyleStateOf(vm.state),
    };
  }

  /** Offset paging over the metadata filter; a failed page fails the list. */
  async list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    const found: Instance[] = [];
    for (let offset = 0; ; ) {
      const page = await this.#call('GET', '/v5/vms', listSchema, {
        query: { metadata: `${metadataKeys.installation}:${installation}`, limit: 100, offset },
        signal: opts?.signal,
        idempotent: true,
      });
      for (const vm of page.vms)
        if (vm.metadata?.[metadataKeys.installation] === installation) found.push(this.#instanceOf(vm));
      offset += page.vms.length;
      if (page.vms.length === 0 || offset >= page.totalCount) return found;
    }
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    await this.#send('DELETE', `/v5/vms/${encodeURIComponent(ref)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
  }

  async exec(ref: string, req: ExecRequest, opts?: CallOptions): Promise<ExecResult> {
    const started = Date.now();
    const command = req.command ?? shellQuote(req.args ?? []);
    // No cwd field: change directory in the script. The sandbox env is sourced first, the exec's own
    // env exported after it so it wins. An env file that cannot be read fails the command with the shell's
    // own message: a command never runs without the env it was given.
    const script = [
      `if [ -e ${envFile} ]; then . ${envFile}; fi`,
      envScript(req.env ?? {}).trimEnd(),
      `${req.cwd === undefined ? '' : `cd ${singleQuoted(req.cwd)} && `}{ ${command}\n}`,
    ]
      .filter((line) => line !== '')
      .join('\n');
    const timeoutMs = Math.min((req.timeoutSeconds ?? maxExecMs / 1000) * 1000, maxExecMs);
    const result = await this.#call('POST', `/v5/vms/${encodeURIComponent(ref)}/exec-await`, execSchema, {
      json: {
        command: script,
        timeoutMs,
        ...(req.stdin !== undefined && { stdin: Buffer.from(req.stdin).toString('base64') }),
      },
      signal: opts?.signal,
    });
    const timedOut = result.statusCode === null;
    return {
      exitCode: timedOut ? 124 : (result.statusCode ?? 0),
      stdout: result.stdout ?? '',
      stderr: result.stderr ?? '',
      durationMs: Date.now() - started,
      truncated: false,
      timedOut,
    };
  }

  /**
   * Reads go straight, as Freestyle's own client sends them: not through the background protocol, whose
   * stored result has a size limit of its own that a large file would run into.
   */
  async readFile(ref: string, path: string, opts?: CallOptions): Promise<Uint8Array> {
    try {
      const response = await this.#http.request('GET', `/v5/vms/${encodeURIComponent(ref)}/fs/read`, {
        query: { path },
        signal: opts?.signal,
        idempotent: true,
      });
      return new Uint8Array(await readBounded(response, maxDownloadBytes, 'a file download'));
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') throw adapterErrors.fileNotFound(path);
      throw error;
    }
  }

  async writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void> {
    const vm = `/v5/vms/${encodeURIComponent(ref)}`;
    const dir = path.slice(0, path.lastIndexOf('/')) || '/';
    await this.#send('POST', `${vm}/fs/mkdir`, { json: { path: dir }, signal: opts?.signal, accept: [409] });
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (content.length <= maxSimpleWriteBytes) {
      // With its sha256, as Freestyle's own client sends it: a body damaged on the way is refused, not written.
      await this.#send('PUT', `${vm}/fs/write`, {
        query: { path, mode: writtenFileMode, sha256 },
        raw: content,
        signal: opts?.signal,
        idempotent: true,
      });
      return;
    }
    // Larger files go through the resumable upload: chunks at their offsets, then a commit, checked by sha256.
    const upload = await this.#call(
      'POST',
      `${vm}/fs/uploads`,
      z.object({ uploadId: z.string().check(z.minLength(1)) }),
      {
        json: { path, size: content.length, sha256, mode: writtenFileMode },
        signal: opts?.signal,
      },
    );
    const base = `${vm}/fs/uploads/${encodeURIComponent(upload.uploadId)}`;
    for (let offset = 0; offset < content.length; offset += uploadChunkBytes) {
      await this.#send('PUT', base, {
        query: { offset },
        raw: content.subarray(offset, offset + uploadChunkBytes),
        signal: opts?.signal,
        idempotent: true,
      });
    }
    await this.#send('POST', `${base}/commit`, { json: {}, signal: opts?.signal });
  }

  async listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]> {
    let listing: z.infer<typeof dirSchema>;
    try {
      listing = await this.#call('GET', `/v5/vms/${encodeURIComponent(ref)}/fs/dir`, dirSchema, {
        query: { path },
        signal: opts?.signal,
        idempotent: true,
      });
    } catch (error) {
      if (isApiError(error) && error.code === 'not_found') throw adapterErrors.fileNotFound(path);
      throw error;
    }
    // Listings carry the name and whether it is a directory; size is not reported (0).
    return listing.entries.map((e) => ({
      name: e.name,
      path: `${path.replace(/\/$/, '')}/${e.name}`,
      isDir: e.kind === 'directory',
      size: 0,
    }));
  }

  /** No stop API: power the guest off and wait for Freestyle to see it stopped. */
  async stop(ref: string, opts?: CallOptions): Promise<void> {
    const vm = await this.#getRaw(ref, opts);
    if (vm.state === 'stopped') return;
    await this.exec(
      ref,
      { command: 'nohup sh -c "sleep 1; poweroff" >/dev/null 2>&1 &', timeoutSeconds: 30 },
      opts,
    );
    await this.#waitFor(ref, ['stopped'], opts);
  }

  async start(ref: string, opts?: CallOptions): Promise<void> {
    const vm = await this.#getRaw(ref, opts);
    if (vm.state === 'running') return;
    await this.#call('POST', `/v5/vms/${encodeURIComponent(ref)}/start`, vmSchema, { signal: opts?.signal });
    await this.#waitFor(ref, ['running'], opts);
  }

  async pause(ref: string, opts?: CallOptions): Promise<void> {
    await this.#call('POST', `/v5/vms/${encodeURIComponent(ref)}/pause`, vmSchema, { signal: opts?.signal });
    await this.#waitFor(ref, ['paused'], opts);
  }

  /** Freestyle resumes a paused VM with start. */
  resume(ref: string, opts?: CallOptions): Promise<void> {
    return this.start(ref, opts);
  }

  /** Always memory and disk, ready when the call returns; reported as memory whatever was asked. */
  async snapshot(ref: string, _kind: 'disk' | 'memory', opts?: CallOptions): Promise<SnapshotInfo> {
    const result = await this.#call(
      'POST',
      `/v5/vms/${encodeURIComponent(ref)}/snapshot`,
      z.object({ snapshotId: z.string().check(z.minLength(1)) }),
      {
        json: {},
        signal: opts?.signal,
      },
    );
    return { ref: result.snapshotId, kind: 'memory', sizeBytes: 0 };
  }

  async deleteSnapshot(snapshotRef: string, opts?: CallOptions): Promise<void> {
    await this.#send('DELETE', `/v5/snapshots/${encodeURIComponent(snapshotRef)}`, {
      signal: opts?.signal,
      idempotent: true,
      accept: [404],
    });
  }

  /** A public TLS rule on <port>-<slug>.<domain>: anyone with the URL can connect (see the trust report). */
  async exposePort(ref: string, port: number, opts?: CallOptions): Promise<string> {
    const vm = await this.#getRaw(ref, opts);
    const domain = `${port}-${vm.slug ?? vm.id}.${this.#config.domain}`.toLowerCase();
    await this.#send('POST', '/v5/tls', {
      json: { action: 'allow', domain, source: { public: true }, destination: { vmId: vm.id, port } },
      signal: opts?.signal,
      accept: [409],
    });
    return `https://${domain}`;
  }

  /** ttlSeconds counts from creation and is never reset: the new deadline is set as age plus the new TTL. */
  async extendTtl(ref: string, ttlSeconds: number, opts?: CallOptions): Promise<void> {
    const vm = await this.#getRaw(ref, opts);
    const ageSeconds =
      vm.createdAt === undefined || vm.createdAt === null
        ? 0
        : Math.ceil((Date.now() - Date.parse(vm.createdAt)) / 1000);
    await this.#call('PATCH', `/v5/vms/${encodeURIComponent(ref)}`, vmSchema, {
      json: { ttlSeconds: ageSeconds + ttlSeconds },
      signal: opts?.signal,
    });
  }
}

/** The sandbox env as a file every exec sources; values single-quoted so nothing in them is interpreted. */
export function envScript(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([key, value]) => `export ${key}=${singleQuoted(value)}\n`)
    .join('');
}

function singleQuoted(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
