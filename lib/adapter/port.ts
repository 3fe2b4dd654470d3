/**
 * The execution-adapter contract (adapter specification sections 2-4). The control plane holds one
 * adapter per pool; every backend (OpenSandbox, Daytona, Freestyle, remote plugins, devhost, fake)
 * implements the required interface and whichever optional ones it can. Beside it, one file a concept:
 * feature names (features.ts), error helpers (errors.ts), capacity (capacity.ts), ownership labels
 * (ownership.ts), the calls that reach a backend (backend-calls.ts), interactive processes (processes.ts).
 */
import type { SandboxNetwork } from '../network/policy.ts';
import type { Resources } from '../schemas/sandbox-parts.ts';
import type { ExecRequest, ExecResult } from '../schemas/sandboxes.ts';

export const adapterProtocolVersion = '1';

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
