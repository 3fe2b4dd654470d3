/**
 * The execution-adapter contract (adapter specification sections 2-4). The control plane holds one
 * adapter per pool; every backend (OpenSandbox, Daytona, Freestyle, remote plugins, devhost, fake)
 * implements the required interface and whichever optional ones it can.
 */
import { ApiError, type ErrorDetails, errors } from '../errors.ts';
import type { SandboxNetwork } from '../network/policy.ts';
import type { Resources } from '../schemas/sandbox-parts.ts';
import type { ExecRequest, ExecResult } from '../schemas/sandboxes.ts';
import { isProcessHost } from './processes.ts';

export const adapterProtocolVersion = '1';

export const features = {
  exec: 'exec',
  execStream: 'exec.stream',
  /** Interactive processes: input written after start, attach again, signals (lib/adapter/processes.ts). */
  execStdin: 'exec.stdin',
  /** Interactive processes in a terminal of their own, resizable. */
  execPty: 'exec.pty',
  /** Commands and processes as the sandbox's superuser when asked (`user: "root"`); otherwise its default user. */
  execRoot: 'exec.root',
  files: 'files',
  stopStart: 'lifecycle.stop-start',
  persistenceDisk: 'persistence.disk',
  pauseResume: 'lifecycle.pause-resume',
  snapshotsDisk: 'snapshots.disk',
  snapshotsMemory: 'snapshots.memory',
  fork: 'fork',
  portsExpose: 'ports.expose',
  ssh: 'ssh',
  pty: 'pty',
  gpu: 'gpu',
  /** A pool-wide egress policy fixed in the pool's config (OpenSandbox, Freestyle): not per sandbox. */
  egressControl: 'network.egress-control',
  /** Per sandbox (lib/network/policy.ts): the network, less the installation's deny-list. */
  egressAllow: 'network.egress.allow',
  /** Per sandbox: no network at all. */
  egressDeny: 'network.egress.deny',
  /** Per sandbox: only the addresses and CIDR ranges of an allow-list. */
  egressAllowlist: 'network.egress.allowlist',
  /** Per sandbox: only the domains (and their subdomains for `*.`) of an allow-list. */
  egressDomains: 'network.egress.domains',
  /** Per sandbox: an allow-list entry held to one port (`host:443`), not every port of the host. */
  egressPorts: 'network.egress.ports',
  archAmd64: 'arch.amd64',
  archArm64: 'arch.arm64',
  isolationMicrovm: 'isolation.microvm',
  isolationContainer: 'isolation.container',
  isolationNone: 'isolation.none',
} as const;

export type Feature = (typeof features)[keyof typeof features];
export const knownFeatures: ReadonlySet<string> = new Set(Object.values(features));

export function isKnownFeature(name: string): name is Feature {
  return knownFeatures.has(name);
}

export type Trust = 'private' | 'external';
export type InstanceState = 'pending' | 'running' | 'stopped' | 'paused' | 'error';

export interface AdapterInfo {
  kind: string;
  version: string;
  trust: Trust;
  isolation: string;
  protocol: string;
  description?: string;
  /** Whether the isolation claim is checked by anything (a probe, the adapter's own construction). */
  isolationVerified?: boolean;
  /** What this adapter does not do that a user might assume it does (shown in the trust report). */
  limitations?: string[];
}

export interface Capabilities {
  features: string[];
  /** 0 means no limit. */
  maxCPU: number;
  maxMemoryMiB: number;
  maxDiskGiB: number;
  /** Empty means any template. */
  templates: string[];
  regions: string[];
}

export interface Capacity {
  /** false: no meaningful limit; the pool's maxConcurrency governs. */
  bounded: boolean;
  freeCPU: number;
  freeMemoryMiB: number;
  /** The roomiest single node, so fragmented capacity is not mistaken for room. */
  largestFreeCPU: number;
  largestFreeMemoryMiB: number;
}

export interface Instance {
  ref: string;
  /**
   * The sandbox the instance belongs to. '' when the backend cannot say without waking the instance (a
   * suspended Lambda MicroVM): the reconciler then knows it by its ref alone and never deletes it on a guess.
   */
  sandboxId: string;
  state: InstanceState;
  region?: string;
  message?: string;
}

export interface CreateRequest {
  /** The sandbox id: the idempotency key. */
  id: string;
  installation: string;
  template?: string;
  resources: Resources;
  env: Record<string, string>;
  labels: Record<string, string>;
  ttlSeconds?: number;
  fromSnapshot?: string;
  /**
   * The sandbox's egress policy (lib/network/policy.ts), sent only to a pool that declared the features it
   * needs: the backend enforces it from the instance's first instruction. Absent: the backend's own network.
   */
  network?: SandboxNetwork;
  /**
   * The sandbox's idle policy, sent only to an adapter that keeps it itself (IdleKeeper.keepsIdle said
   * so): the backend's own timer pauses or stops the instance after this long without use.
   */
  idle?: IdleRequest;
}

/** An idle policy as the backend is asked to keep it: the action is the one the pool can take. */
export interface IdleRequest {
  afterSeconds: number;
  action: 'pause' | 'stop';
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * Epoch milliseconds by which the caller needs an answer (the scheduler's provision timeout). An adapter
   * that waits on the backend (readiness, polling) ends its wait before it with its own verdict, so the
   * caller's abort never has to speak for the backend.
   */
  deadline?: number;
}

export interface ExecOptions extends CallOptions {
  /**
   * Keep at most this many bytes of each of stdout and stderr (the rest is dropped and `truncated` set).
   * An adapter that collects output stops buffering here; the control plane bounds every result too.
   */
  maxOutputBytes?: number;
}

export interface ExecutionAdapter {
  info(): AdapterInfo;
  capabilities(opts?: CallOptions): Promise<Capabilities>;
  capacity(opts?: CallOptions): Promise<Capacity>;
  /** Resolves when the backend can accept work; rejects otherwise. */
  health(opts?: CallOptions): Promise<void>;
  /** Idempotent on req.id: the same id never yields a second instance. */
  create(req: CreateRequest, opts?: CallOptions): Promise<Instance>;
  get(ref: string, opts?: CallOptions): Promise<Instance>;
  /** Every instance of the installation, or a rejection: never a partial list. */
  list(installation: string, opts?: CallOptions): Promise<Instance[]>;
  /** Idempotent: deleting a missing instance succeeds. */
  delete(ref: string, opts?: CallOptions): Promise<void>;
  /** A non-zero exit is a result, not an error. */
  exec(ref: string, req: ExecRequest, opts?: ExecOptions): Promise<ExecResult>;
}

export interface ExecEvent {
  stream: 'stdout' | 'stderr';
  data: string;
}

export interface FileInfo {
  name: string;
  path: string;
  isDir: boolean;
  size: number;
  modifiedAt?: string;
}

export interface SnapshotInfo {
  ref: string;
  kind: 'disk' | 'memory';
  sizeBytes: number;
}

/**
 * Receives streamed output. When it returns a promise the consumer is not keeping up (a client that does
 * not read): an adapter that can slow its source waits for it before producing more (backpressure), so
 * nothing is buffered without bound.
 */
export type ExecEmit = (event: ExecEvent) => void | Promise<void>;

export interface Streamer {
  execStream(ref: string, req: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number>;
}
export interface ReadFileOptions extends CallOptions {
  /**
   * The most bytes the caller will take (the API's 4 MiB). An adapter that can see a file's size first
   * refuses a larger one with payload_too_large before reading it; the control plane checks again.
   */
  maxBytes?: number;
}

export interface FileSystem {
  readFile(ref: string, path: string, opts?: ReadFileOptions): Promise<Uint8Array>;
  writeFile(ref: string, path: string, content: Uint8Array, opts?: CallOptions): Promise<void>;
  listFiles(ref: string, path: string, opts?: CallOptions): Promise<FileInfo[]>;
}
export interface Lifecycle {
  stop(ref: string, opts?: CallOptions): Promise<void>;
  start(ref: string, opts?: CallOptions): Promise<void>;
}
export interface Pauser {
  pause(ref: string, opts?: CallOptions): Promise<void>;
  resume(ref: string, opts?: CallOptions): Promise<void>;
}
export interface SnapshotOptions extends CallOptions {
  /**
   * The control plane's snapshot id. A backend that can name snapshots uses it so that a repeated call
   * (a worker retried after a crash) finds the snapshot the first call made instead of taking another.
   */
  id?: string;
}

export interface Snapshotter {
  snapshot(ref: string, kind: 'disk' | 'memory', opts?: SnapshotOptions): Promise<SnapshotInfo>;
  deleteSnapshot(snapshotRef: string, opts?: CallOptions): Promise<void>;
}
/**
 * Backends with a provider-side lifetime (OpenSandbox timeout, Daytona ttlMinutes, Freestyle ttlSeconds)
 * that can be moved after creation. Without it, extending a sandbox's TTL leaves the backstop where it
 * was (the seeds' E0.20), and the API says so.
 */
export interface TtlExtender {
  extendTtl(ref: string, ttlSeconds: number, opts?: CallOptions): Promise<void>;
}

/**
 * Backends with an idle timer of their own (Daytona's auto-stop, Lambda MicroVMs' idle policy). A sandbox
 * whose policy the backend can keep exactly is created with it (CreateRequest.idle): the backend pauses or
 * stops the instance, and the control plane follows what it did (lib/scheduler/idle-check.ts), its own
 * checks kept as the backstop. Elsewhere the control plane enforces the policy itself.
 */
export interface IdleKeeper {
  /** Whether the backend keeps this policy as asked (its timer's unit and range, the action it takes). */
  keepsIdle(idle: IdleRequest): boolean;
  /**
   * Counts as use on the backend's timer: called while a command runs, which the backend's timer does not
   * see (Daytona's counts API calls, not processes; Lambda MicroVMs' counts inbound requests).
   */
  markActive(ref: string, opts?: CallOptions): Promise<void>;
}

export interface PortExposer {
  exposePort(ref: string, port: number, opts?: CallOptions): Promise<string>;
}

function hasMethods(adapter: object, ...names: string[]): boolean {
  const record = adapter as Record<string, unknown>;
  return names.every((name) => typeof record[name] === 'function');
}

export const isStreamer = (a: ExecutionAdapter): a is ExecutionAdapter & Streamer =>
  hasMethods(a, 'execStream');
export const isFileSystem = (a: ExecutionAdapter): a is ExecutionAdapter & FileSystem =>
  hasMethods(a, 'readFile', 'writeFile', 'listFiles');
export const isLifecycle = (a: ExecutionAdapter): a is ExecutionAdapter & Lifecycle =>
  hasMethods(a, 'stop', 'start');
export const isPauser = (a: ExecutionAdapter): a is ExecutionAdapter & Pauser =>
  hasMethods(a, 'pause', 'resume');
export const isSnapshotter = (a: ExecutionAdapter): a is ExecutionAdapter & Snapshotter =>
  hasMethods(a, 'snapshot', 'deleteSnapshot');
export const isPortExposer = (a: ExecutionAdapter): a is ExecutionAdapter & PortExposer =>
  hasMethods(a, 'exposePort');
export const isIdleKeeper = (a: ExecutionAdapter): a is ExecutionAdapter & IdleKeeper =>
  hasMethods(a, 'keepsIdle', 'markActive');
export const isTtlExtender = (a: ExecutionAdapter): a is ExecutionAdapter & TtlExtender =>
  hasMethods(a, 'extendTtl');

/** Features backed by an optional interface; everything else is required or declaration-only. */
const interfaceOf: Partial<Record<Feature, (a: ExecutionAdapter) => boolean>> = {
  'exec.stream': isStreamer,
  'exec.stdin': isProcessHost,
  'exec.pty': isProcessHost,
  files: isFileSystem,
  'lifecycle.stop-start': isLifecycle,
  'persistence.disk': isLifecycle,
  'lifecycle.pause-resume': isPauser,
  'snapshots.disk': isSnapshotter,
  'snapshots.memory': isSnapshotter,
  fork: isSnapshotter,
  'ports.expose': isPortExposer,
};

/**
 * The features a pool really advertises: declared features minus those whose optional interface the
 * adapter does not implement. Declaration-only names (network.egress-control, ssh, pty, gpu, arch.*,
 * isolation.*) pass through as declared, as do names this build does not know.
 */
export function effectiveFeatures(adapter: ExecutionAdapter, declared: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of declared) {
    const check = isKnownFeature(name) ? interfaceOf[name] : undefined;
    if ((check === undefined || check(adapter)) && !out.includes(name)) out.push(name);
  }
  return out;
}

/** The report of a backend that has no capacity figure of its own: the pool's maxConcurrency governs. */
export function unboundedCapacity(): Capacity {
  return { bounded: false, freeCPU: 0, freeMemoryMiB: 0, largestFreeCPU: 0, largestFreeMemoryMiB: 0 };
}

/** Whether a capacity report has room for one sandbox of this size. */
export function capacityFits(capacity: Capacity, resources: Resources): boolean {
  if (!capacity.bounded) return true;
  return capacity.largestFreeCPU >= resources.cpu && capacity.largestFreeMemoryMiB >= resources.memoryMiB;
}

/** Error helpers with the contract's codes (adapter.NotFound, adapter.Unsupported, ...). */
/** Every call of the contract that reaches a backend (`info()` is local and synchronous). */
export const backendCalls = [
  'capabilities',
  'capacity',
  'health',
  'create',
  'get',
  'list',
  'delete',
  'exec',
  'execStream',
  'readFile',
  'writeFile',
  'listFiles',
  'stop',
  'start',
  'pause',
  'resume',
  'snapshot',
  'deleteSnapshot',
  'extendTtl',
  'exposePort',
  'markActive',
  'startProcess',
  'listProcesses',
  'attachProcess',
  'readProcessOutput',
  'writeStdin',
  'closeStdin',
  'resizeProcess',
  'signalProcess',
] as const;
export type BackendCall = (typeof backendCalls)[number];

export const adapterErrors = {
  notFound: (ref: string) => new ApiError('not_found', `instance ${ref} not found`, { ref }),
  /** A path the sandbox does not have (a file call, not the instance). */
  fileNotFound: (path: string) =>
    new ApiError('not_found', `no file or directory at ${path} in the sandbox`, { path }),
  unsupported: (operation: string, details?: ErrorDetails) => errors.unsupportedOperation(operation, details),
  unavailable: (message: string, details?: ErrorDetails, options?: ErrorOptions) =>
    errors.providerUnavailable(message, details, options),
  insufficientCapacity: (message: string, details?: ErrorDetails) =>
    errors.insufficientCapacity(message, details),
  sandboxFailed: (message: string, details?: ErrorDetails) => errors.sandboxFailed(message, details),
  invalidRequest: (message: string, details?: ErrorDetails) => errors.invalidRequest(message, details),
  invalidState: (message: string, details?: ErrorDetails) => errors.invalidState(message, details),
};

/** The label keys every backend instance carries so List and the reconciler can find their owner. */
export const ownershipLabelKeys = {
  sandboxId: 'differently.dev/sandbox-id',
  installation: 'differently.dev/installation',
} as const;

/** The ownership labels over the sandbox's own (which can never override them). */
export function ownershipLabels(
  sandboxId: string,
  installation: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ...extra,
    [ownershipLabelKeys.sandboxId]: sandboxId,
    [ownershipLabelKeys.installation]: installation,
  };
}

/**
 * A file-system error in plain words, for adapters that reach the sandbox's files through a file system
 * (errno codes never reach a client): missing, a directory where a file was expected, or a file in the
 * middle of a path.
 */
export function fileSystemError(error: unknown, path: string): Error {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return adapterErrors.fileNotFound(path);
  if (code === 'EISDIR')
    return adapterErrors.invalidRequest(`${path} is a directory: read a file, or list the directory`, {
      path,
    });
  // EEXIST: mkdir met a file where a folder of the path should be.
  if (code === 'ENOTDIR' || code === 'EEXIST')
    return adapterErrors.invalidRequest(`a part of ${path} is a file, not a directory`, { path });
  if (code === 'ENAMETOOLONG')
    return adapterErrors.invalidRequest(`${path} has a name longer than the sandbox's file system allows`, {
      path,
    });
  // A FIFO or device nobody serves (opened without blocking).
  if (code === 'ENXIO' || code === 'ENODEV')
    return adapterErrors.invalidRequest(`${path} is not a regular file`, { path });
  if (code === 'ELOOP')
    return adapterErrors.invalidRequest(`${path} passes through too many symbolic links`, { path });
  if (code === 'EACCES' || code === 'EPERM')
    return adapterErrors.invalidRequest(`${path} cannot be accessed in the sandbox`, { path });
  return error instanceof Error ? error : new Error(String(error));
}
