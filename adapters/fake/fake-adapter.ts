import { type BackendCall, backendCalls } from '../../lib/adapter/backend-calls.ts';
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
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type Instance,
  type InstanceState,
  type Lifecycle,
  type Pauser,
  type PortExposer,
  type SnapshotInfo,
  type SnapshotOptions,
  type Snapshotter,
  type Streamer,
  type Trust,
  type TtlExtender,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { newId } from '../../lib/ids.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import { type ProcessDriver, ProcessTable, type TrackedProcess } from '../process-table.ts';

export type FakeExecFunc = (request: ExecRequest, instance: Instance) => ExecResult | Promise<ExecResult>;

/**
 * The backend calls a test can make fail (`inject`): all but TTL extension, port exposure and the idle
 * timer's (the fake keeps no idle timer of its own: the control plane enforces its idle policies).
 */
export const fakeMethods = backendCalls.filter(
  (call): call is Exclude<BackendCall, 'extendTtl' | 'exposePort' | 'markActive'> =>
    call !== 'extendTtl' && call !== 'exposePort' && call !== 'markActive',
);
export type FakeMethod = (typeof fakeMethods)[number];

export interface FakeFailure {
  error: Error;
  /** How many calls fail; default 1. */
  times?: number;
  /** Do the work, then fail: simulates a response lost after the backend acted. */
  afterEffect?: boolean;
}

export interface FakeAdapterOptions {
  trust?: Trust;
  features?: string[];
  /** When set, Capacity is bounded by this many CPUs (and totalMemoryMiB). */
  totalCPU?: number;
  totalMemoryMiB?: number;
  /** Declared limits, templates and regions (default: none, any template). */
  limits?: Partial<Omit<Capabilities, 'features'>>;
  exec?: FakeExecFunc;
  /** Milliseconds a method takes before it acts (a slow backend), honouring the call's abort signal. */
  delaysMs?: Partial<Record<FakeMethod, number>>;
}

interface FakeInstance extends Instance {
  installation: string;
  /** The sandbox's env: the base of every exec's env, as on a real backend. */
  env: Record<string, string>;
  cpu: number;
  memoryMiB: number;
  files: Map<string, Uint8Array>;
}

export const fakeDefaultFeatures = [
  'exec',
  'exec.stream',
  'exec.stdin',
  'exec.pty',
  'files',
  'lifecycle.stop-start',
  'persistence.disk',
  'lifecycle.pause-resume',
  'snapshots.disk',
  'snapshots.memory',
  'fork',
  'ports.expose',
  // Egress policies are taken and kept with the instance (createRequests, networkOf): the fake has no
  // network to enforce them on, so placement and what reaches the backend are what its tests prove.
  'network.egress.allow',
  'network.egress.deny',
  'network.egress.allowlist',
  'network.egress.domains',
  'network.egress.ports',
];

function withBaseEnv(request: ExecRequest, instance: FakeInstance): ExecRequest {
  return Object.keys(instance.env).length === 0
    ? request
    : { ...request, env: { ...instance.env, ...request.env } };
}

/** The default exec: a command's text comes back on stdout, exit code 0. */
const echoExec: FakeExecFunc = (request) => ({
  exitCode: 0,
  stdout: `${request.command ?? request.args?.join(' ') ?? ''}\n`,
  stderr: '',
  durationMs: 0,
  truncated: false,
  timedOut: false,
});

/**
 * An in-memory backend for tests and dev mode. Create is idempotent on the sandbox id; failures can be
 * injected per method; every call is counted so tests can assert what the control plane did.
 */
export class FakeAdapter
  implements
    ExecutionAdapter,
    Streamer,
    FileSystem,
    Lifecycle,
    Pauser,
    Snapshotter,
    PortExposer,
    TtlExtender,
    ProcessHost
{
  readonly #options: FakeAdapterOptions;
  readonly #instances = new Map<string, FakeInstance>();
  readonly #bySandbox = new Map<string, string>();
  readonly #snapshots = new Map<string, { kind: 'disk' | 'memory'; files: Map<string, Uint8Array> }>();
  readonly #failures = new Map<FakeMethod, FakeFailure[]>();
  /** Interactive processes: each one behaves as `cat` (its input comes back on stdout). */
  readonly #processes = new ProcessTable();
  readonly calls = new Map<FakeMethod, number>();
  /** Every create request received, in order (what a backend would have been told). */
  readonly createRequests: CreateRequest[] = [];

  constructor(options: FakeAdapterOptions = {}) {
    this.#options = { ...options };
  }

  /** Queue a failure for the next call(s) of a method. */
  inject(method: FakeMethod, failure: FakeFailure): void {
    const queue = this.#failures.get(method) ?? [];
    queue.push({ times: 1, ...failure });
    this.#failures.set(method, queue);
  }

  /** Forget every queued failure (a backend that recovered). */
  clearFailures(): void {
    this.#failures.clear();
  }

  setExec(exec: FakeExecFunc | undefined): void {
    this.#options.exec = exec;
  }

  /** Change an instance behind the control plane's back (as a backend would). */
  setState(ref: string, state: InstanceState, message?: string): void {
    const instance = this.#instance(ref);
    instance.state = state;
    if (message !== undefined) instance.message = message;
  }

  /** Remove an instance behind the control plane's back. */
  vanish(ref: string): void {
    const instance = this.#instances.get(ref);
    if (instance === undefined) return;
    this.#processes.endAll(ref);
    this.#instances.delete(ref);
    this.#bySandbox.delete(instance.sandboxId);
  }

  /**
   * Adds an instance the way a misbehaving backend might (a second one for the same sandbox, or one
   * nobody asked for): for reconciler tests.
   */
  plant(sandboxId: string, installation: string, state: InstanceState = 'running'): Instance {
    const instance: FakeInstance = {
      ref: newId('sandbox').replace('sbx_', 'fake_'),
      sandboxId,
      state,
      installation,
      env: {},
      cpu: 0,
      memoryMiB: 0,
      files: new Map(),
    };
    this.#instances.set(instance.ref, instance);
    return strip(instance);
  }

  instanceCount(): number {
    return this.#instances.size;
  }

  info(): AdapterInfo {
    return {
      kind: 'fake',
      version: '1',
      trust: this.#options.trust ?? 'private',
      isolation: 'none (simulated in memory)',
      protocol: adapterProtocolVersion,
      // Nothing runs, so there is nothing to isolate: the claim is true by construction.
      isolationVerified: true,
      limitations: ['dev mode only: nothing runs; exec echoes or runs a test function'],
    };
  }

  async capabilities(): Promise<Capabilities> {
    return this.#enter('capabilities', () => ({
      features: this.#options.features ?? fakeDefaultFeatures,
      maxCPU: 0,
      maxMemoryMiB: 0,
      maxDiskGiB: 0,
      templates: [],
      regions: [],
      ...this.#options.limits,
    }));
  }

  async capacity(): Promise<Capacity> {
    return this.#enter('capacity', () => {
      const { totalCPU, totalMemoryMiB } = this.#options;
      if (totalCPU === undefined) {
        return unboundedCapacity();
      }
      const used = [...this.#instances.values()].reduce(
        (sum, i) => ({ cpu: sum.cpu + i.cpu, memory: sum.memory + i.memoryMiB }),
        { cpu: 0, memory: 0 },
      );
      const freeCPU = Math.max(totalCPU - used.cpu, 0);
      const freeMemoryMiB = Math.max((totalMemoryMiB ?? Number.MAX_SAFE_INTEGER) - used.memory, 0);
      return {
        bounded: true,
        freeCPU,
        freeMemoryMiB,
        largestFreeCPU: freeCPU,
        largestFreeMemoryMiB: freeMemoryMiB,
      };
    });
  }

  async health(): Promise<void> {
    await this.#enter('health', () => undefined);
  }

  async create(request: CreateRequest, opts?: CallOptions): Promise<Instance> {
    await this.#delay('create', opts?.signal);
    return this.#enter('create', () => {
      this.createRequests.push(structuredClone(request));
      const existing = this.#bySandbox.get(request.id);
      if (existing !== undefined) return strip(this.#instance(existing));
      let files = new Map<string, Uint8Array>();
      if (request.fromSnapshot !== undefined) {
        const snapshot = this.#snapshots.get(request.fromSnapshot);
        if (snapshot === undefined)
          throw adapterErrors.invalidRequest(`snapshot ${request.fromSnapshot} not found`);
        files = new Map(snapshot.files);
      }
      const instance: FakeInstance = {
        ref: newId('sandbox').replace('sbx_', 'fake_'),
        sandboxId: request.id,
        state: 'running',
        installation: request.installation,
        env: { ...request.env },
        cpu: request.resources.cpu,
        memoryMiB: request.resources.memoryMiB,
        files,
      };
      this.#instances.set(instance.ref, instance);
      this.#bySandbox.set(request.id, instance.ref);
      return strip(instance);
    });
  }

  async get(ref: string): Promise<Instance> {
    return this.#enter('get', () => strip(this.#instance(ref)));
  }

  async list(installation: string, opts?: CallOptions): Promise<Instance[]> {
    await this.#delay('list', opts?.signal);
    return this.#enter('list', () =>
      [...this.#instances.values()].filter((i) => i.installation === installation).map(strip),
    );
  }

  async delete(ref: string, opts?: CallOptions): Promise<void> {
    await this.#delay('delete', opts?.signal);
    await this.#enter('delete', () => this.vanish(ref));
  }

  async exec(ref: string, request: ExecRequest): Promise<ExecResult> {
    const instance = await this.#enter('exec', () => this.#running(ref));
    return (this.#options.exec ?? echoExec)(withBaseEnv(request, instance), strip(instance));
  }

  async execStream(ref: string, request: ExecRequest, emit: (event: ExecEvent) => void): Promise<number> {
    const instance = await this.#enter('execStream', () => this.#running(ref));
    const result = await (this.#options.exec ?? echoExec)(withBaseEnv(request, instance), strip(instance));
    if (result.stdout !== '') emit({ stream: 'stdout', data: result.stdout });
    if (result.stderr !== '') emit({ stream: 'stderr', data: result.stderr });
    return result.exitCode;
  }

  async readFile(ref: string, path: string): Promise<Uint8Array> {
    return this.#enter('readFile', () => {
      const content = this.#running(ref).files.get(path);
      if (content === undefined) throw adapterErrors.fileNotFound(path);
      return content;
    });
  }

  async writeFile(ref: string, path: string, content: Uint8Array): Promise<void> {
    await this.#enter('writeFile', () => {
      this.#running(ref).files.set(path, new Uint8Array(content));
    });
  }

  async listFiles(ref: string, path: string): Promise<FileInfo[]> {
    return this.#enter('listFiles', () => {
      const prefix = path.endsWith('/') ? path : `${path}/`;
      const entries = new Map<string, FileInfo>();
      for (const [filePath, content] of this.#running(ref).files) {
        if (!filePath.startsWith(prefix)) continue;
        const [name, ...rest] = filePath.slice(prefix.length).split('/');
        if (name === undefined || name === '') continue;
        const isDir = rest.length > 0;
        entries.set(name, { name, path: `${prefix}${name}`, isDir, size: isDir ? 0 : content.length });
      }
      return [...entries.values()].sort((a, b) => a.name.localeCompare(b.name));
    });
  }

  async stop(ref: string, opts?: CallOptions): Promise<void> {
    await this.#delay('stop', opts?.signal);
    await this.#enter('stop', () => {
      this.#move(ref, ['running'], 'stopped');
      this.#processes.endAll(ref);
    });
  }

  async startProcess(ref: string, request: ProcessStartRequest): Promise<ProcessInfo> {
    return this.#enter('startProcess', () => {
      const instance = this.#running(ref);
      const tracked = this.#processes.start(ref, request, (process) =>
        catDriver(process, (code) => this.#processes.ended(ref, process, code)),
      );
      // `cat` and terminals are interactive; any other command runs as the fake's exec would and exits.
      if (request.pty === undefined && request.argv[0] !== 'cat') {
        const exec: ExecRequest = request.shell
          ? { command: request.argv.join(' '), env: request.env }
          : { args: request.argv, env: request.env };
        void Promise.resolve((this.#options.exec ?? echoExec)(withBaseEnv(exec, instance), strip(instance)))
          .then((result) => {
            if (result.stdout !== '') tracked.output({ stream: 'stdout', data: result.stdout });
            if (result.stderr !== '') tracked.output({ stream: 'stderr', data: result.stderr });
            this.#processes.ended(ref, tracked, result.exitCode);
          })
          .catch(() => this.#processes.ended(ref, tracked, 1));
      }
      return { ...tracked.info };
    });
  }

  async listProcesses(ref: string): Promise<ProcessInfo[]> {
    return this.#enter('listProcesses', () => {
      this.#instance(ref);
      return this.#processes.list(ref);
    });
  }

  async attachProcess(
    ref: string,
    pid: number,
    emit: ExecEmit,
    opts?: CallOptions,
  ): Promise<number | undefined> {
    const process = await this.#enter('attachProcess', () => this.#processes.get(ref, pid));
    return process.attach(emit, opts?.signal);
  }

  async readProcessOutput(ref: string, pid: number, maxBytes: number): Promise<ProcessOutput> {
    return this.#enter('readProcessOutput', () => this.#processes.get(ref, pid).read(maxBytes));
  }

  async writeStdin(ref: string, pid: number, data: Uint8Array): Promise<void> {
    await this.#enter('writeStdin', () => this.#processes.get(ref, pid).write(data));
  }

  async closeStdin(ref: string, pid: number): Promise<void> {
    await this.#enter('closeStdin', () => this.#processes.get(ref, pid).closeStdin());
  }

  async resizeProcess(ref: string, pid: number, size: TerminalSize): Promise<void> {
    await this.#enter('resizeProcess', () => this.#processes.get(ref, pid).resize(size));
  }

  async signalProcess(ref: string, pid: number, signal: ProcessSignal): Promise<void> {
    await this.#enter('signalProcess', () => this.#processes.get(ref, pid).signal(signal));
  }

  async start(ref: string, opts?: CallOptions): Promise<void> {
    await this.#delay('start', opts?.signal);
    await this.#enter('start', () => this.#move(ref, ['stopped'], 'running'));
  }

  async pause(ref: string, opts?: CallOptions): Promise<void> {
    await this.#delay('pause', opts?.signal);
    await this.#enter('pause', () => this.#move(ref, ['running'], 'paused'));
  }

  async resume(ref: string, opts?: CallOptions): Promise<void> {
    await this.#delay('resume', opts?.signal);
    await this.#enter('resume', () => this.#move(ref, ['paused'], 'running'));
  }

  /** Snapshots named by the caller's id, as a backend that names snapshots keeps them. */
  readonly #snapshotsById = new Map<string, Promise<SnapshotInfo>>();

  async snapshot(ref: string, kind: 'disk' | 'memory', opts?: SnapshotOptions): Promise<SnapshotInfo> {
    const id = opts?.id;
    const known = id === undefined ? undefined : this.#snapshotsById.get(id);
    // The same id again (a worker retried after a crash): the snapshot the first call is taking or took.
    if (known !== undefined) return known;
    const taking = (async () => {
      await this.#delay('snapshot', opts?.signal);
      return this.#enter('snapshot', () => {
        const instance = this.#instance(ref);
        const snapshotRef = newId('snapshot').replace('snp_', 'fakesnap_');
        this.#snapshots.set(snapshotRef, { kind, files: new Map(instance.files) });
        const sizeBytes = [...instance.files.values()].reduce((sum, content) => sum + content.length, 0);
        return { ref: snapshotRef, kind, sizeBytes };
      });
    })();
    if (id !== undefined) {
      this.#snapshotsById.set(id, taking);
      taking.catch(() => this.#snapshotsById.delete(id));
    }
    return taking;
  }

  /** A backend's own pace: waits `delaysMs[method]`, unless the caller aborts first. */
  async #delay(method: FakeMethod, signal?: AbortSignal): Promise<void> {
    const ms = this.#options.delaysMs?.[method] ?? 0;
    if (ms <= 0) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    });
  }

  async deleteSnapshot(snapshotRef: string): Promise<void> {
    await this.#enter('deleteSnapshot', () => this.#snapshots.delete(snapshotRef));
  }

  snapshotCount(): number {
    return this.#snapshots.size;
  }

  /** The provider-side lifetime last set per instance, in seconds (the fake's backstop). */
  readonly backstops = new Map<string, number>();

  async extendTtl(ref: string, ttlSeconds: number): Promise<void> {
    this.#instance(ref);
    this.backstops.set(ref, ttlSeconds);
  }

  async exposePort(ref: string, port: number): Promise<string> {
    this.#running(ref);
    return `https://${port}-${ref}.fake.invalid`;
  }

  /** Counts the call, applies an injected failure before or after the work. */
  async #enter<T>(method: FakeMethod, work: () => T): Promise<T> {
    this.calls.set(method, (this.calls.get(method) ?? 0) + 1);
    const queue = this.#failures.get(method);
    const failure = queue?.[0];
    if (failure !== undefined && queue !== undefined) {
      failure.times = (failure.times ?? 1) - 1;
      if (failure.times <= 0) queue.shift();
      if (failure.afterEffect === true) work();
      throw failure.error;
    }
    return work();
  }

  #instance(ref: string): FakeInstance {
    const instance = this.#instances.get(ref);
    if (instance === undefined) throw adapterErrors.notFound(ref);
    return instance;
  }

  #running(ref: string): FakeInstance {
    const instance = this.#instance(ref);
    if (instance.state !== 'running') {
      throw adapterErrors.invalidState(`instance ${ref} is ${instance.state}`, { state: instance.state });
    }
    return instance;
  }

  #move(ref: string, from: InstanceState[], to: InstanceState): void {
    const instance = this.#instance(ref);
    if (!from.includes(instance.state)) {
      throw adapterErrors.invalidState(`instance ${ref} is ${instance.state}, not ${from.join(' or ')}`, {
        state: instance.state,
      });
    }
    instance.state = to;
  }
}

function strip(instance: FakeInstance): Instance {
  return {
    ref: instance.ref,
    sandboxId: instance.sandboxId,
    state: instance.state,
    ...(instance.message !== undefined && { message: instance.message }),
  };
}

/** The fake's interactive process (`cat`, or any in a terminal): `cat`. Input comes back on stdout, end of input ends it (0), a signal ends it (128 + n). */
function catDriver(process: TrackedProcess, exit: (code: number) => void): ProcessDriver {
  const signals: Record<ProcessSignal, number> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGKILL: 9,
    SIGUSR1: 10,
    SIGUSR2: 12,
    SIGTERM: 15,
  };
  return {
    write: (data) => process.output({ stream: 'stdout', data: Buffer.from(data).toString('utf8') }),
    pendingInput: () => 0,
    closeStdin: () => queueMicrotask(() => exit(0)),
    resize: () => undefined,
    signal: (signal) => queueMicrotask(() => exit(128 + signals[signal])),
    pauseOutput: () => undefined,
    resumeOutput: () => undefined,
    kill: () => exit(137),
  };
}
