import { adapterErrors } from '../lib/adapter/errors.ts';
import type { ExecEmit, ExecEvent } from '../lib/adapter/port.ts';
import type {
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../lib/adapter/processes.ts';
import { ApiError } from '../lib/errors.ts';

/**
 * What a backend that runs processes itself (devhost, fake) keeps of them: the backend's state, shared by
 * every container of the process that runs it (as a provider's daemon would be), never the control
 * plane's. Output nobody has taken waits here, bounded: past the bound the process's output is paused
 * (backpressure) until an attach or a read takes it, so nothing is lost and nothing grows without end.
 */

/** What the table needs of a running process. */
export interface ProcessDriver {
  write(data: Uint8Array): void;
  /** Bytes written and not yet taken by the process (a process that does not read). */
  pendingInput(): number;
  closeStdin(): void;
  resize(size: TerminalSize): void;
  signal(signal: ProcessSignal): void;
  pauseOutput(): void;
  resumeOutput(): void;
  /** Ends the process and all it started (delete, timeout, shutdown). */
  kill(): void;
}

export interface ProcessLimits {
  /** Live processes per instance. */
  maxPerInstance: number;
  /** Unread output held per process before its output is paused. */
  maxUnreadBytes: number;
  /** Input written and not yet read by the process. */
  maxPendingInputBytes: number;
  /** Input accepted per process per second. */
  maxInputBytesPerSecond: number;
  /** How long an ended process stays listed (its exit code and unread output) after it ended. */
  keepEndedMs: number;
}

export const defaultProcessLimits: ProcessLimits = {
  maxPerInstance: 16,
  maxUnreadBytes: 1024 * 1024,
  maxPendingInputBytes: 1024 * 1024,
  maxInputBytesPerSecond: 1024 * 1024,
  keepEndedMs: 5 * 60_000,
};

interface Attacher {
  emit: ExecEmit;
}

export class TrackedProcess {
  readonly info: ProcessInfo;
  readonly #driver: ProcessDriver;
  readonly #limits: ProcessLimits;
  #unread: ExecEvent[] = [];
  #unreadBytes = 0;
  #paused = false;
  #attachers = new Set<Attacher>();
  #waiting: (() => void)[] = [];
  #inputWindow = { startedAt: 0, bytes: 0 };

  constructor(info: ProcessInfo, driver: ProcessDriver, limits: ProcessLimits) {
    this.info = info;
    this.#driver = driver;
    this.#limits = limits;
  }

  get ended(): boolean {
    return this.info.exitCode !== null;
  }

  /** Output as the process produced it: to every attached caller, or held unread. */
  output(event: ExecEvent): void {
    if (this.#attachers.size === 0) {
      this.#unread.push(event);
      this.#unreadBytes += Buffer.byteLength(event.data, 'utf8');
      if (this.#unreadBytes >= this.#limits.maxUnreadBytes) this.#pause();
      return;
    }
    const waits: Promise<void>[] = [];
    for (const attacher of this.#attachers) {
      const waiting = attacher.emit(event);
      if (waiting !== undefined) waits.push(waiting);
    }
    if (waits.length > 0) {
      this.#pause();
      void Promise.allSettled(waits).then(() => this.#resumeIfRoom());
    }
  }

  exited(exitCode: number): void {
    this.info.exitCode = exitCode;
    this.info.stdinOpen = false;
    for (const wake of this.#waiting.splice(0)) wake();
  }

  async attach(emit: ExecEmit, signal: AbortSignal | undefined): Promise<number | undefined> {
    // Unread output first, in order; what the process produces meanwhile joins the queue.
    while (this.#unread.length > 0) {
      if (signal?.aborted) return undefined;
      const event = this.#unread.shift() as ExecEvent;
      this.#unreadBytes -= Buffer.byteLength(event.data, 'utf8');
      await emit(event);
    }
    if (this.ended) return this.info.exitCode ?? undefined;
    // Detached while the unread output was being handed over: an abort already fired is never heard again.
    if (signal?.aborted) return undefined;
    const attacher: Attacher = { emit };
    this.#attachers.add(attacher);
    this.info.attached = this.#attachers.size;
    this.#resumeIfRoom();
    try {
      return await new Promise<number | undefined>((resolve) => {
        const onAbort = () => resolve(undefined);
        signal?.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.info.exitCode ?? undefined);
        });
      });
    } finally {
      this.#attachers.delete(attacher);
      this.info.attached = this.#attachers.size;
    }
  }

  read(maxBytes: number): ProcessOutput {
    const events: ExecEvent[] = [];
    let bytes = 0;
    while (this.#unread.length > 0) {
      const next = this.#unread[0] as ExecEvent;
      const size = Buffer.byteLength(next.data, 'utf8');
      if (bytes + size > maxBytes) {
        if (bytes > 0) break;
        // A single chunk larger than the room: cut it on a character boundary, keep the rest unread.
        const cut = Buffer.from(next.data, 'utf8')
          .subarray(0, maxBytes)
          .toString('utf8')
          .replace(/\uFFFD$/, '');
        next.data = next.data.slice(cut.length);
        this.#unreadBytes -= Buffer.byteLength(cut, 'utf8');
        events.push({ stream: next.stream, data: cut });
        break;
      }
      this.#unread.shift();
      this.#unreadBytes -= size;
      bytes += size;
      events.push(next);
    }
    this.#resumeIfRoom();
    return {
      events,
      dropped: false,
      exitCode: this.#unread.length === 0 ? this.info.exitCode : null,
    };
  }

  write(data: Uint8Array): void {
    this.#requireRunning('write to');
    if (!this.info.stdinOpen)
      throw adapterErrors.invalidState(`the stdin of process ${this.info.pid} is closed`, {
        pid: this.info.pid,
      });
    const now = Date.now();
    if (now - this.#inputWindow.startedAt >= 1000) this.#inputWindow = { startedAt: now, bytes: 0 };
    if (this.#inputWindow.bytes + data.length > this.#limits.maxInputBytesPerSecond)
      throw new ApiError(
        'quota_exceeded',
        `process ${this.info.pid} takes at most ${this.#limits.maxInputBytesPerSecond} bytes of input a second`,
        { pid: this.info.pid, limitBytesPerSecond: this.#limits.maxInputBytesPerSecond },
      );
    if (this.#driver.pendingInput() + data.length > this.#limits.maxPendingInputBytes)
      throw new ApiError(
        'quota_exceeded',
        `process ${this.info.pid} is not reading its input: ${this.#driver.pendingInput()} bytes wait already`,
        { pid: this.info.pid, limitBytes: this.#limits.maxPendingInputBytes },
      );
    this.#inputWindow.bytes += data.length;
    this.#driver.write(data);
  }

  closeStdin(): void {
    this.#requireRunning('close the stdin of');
    if (!this.info.stdinOpen) return;
    this.info.stdinOpen = false;
    this.#driver.closeStdin();
  }

  resize(size: TerminalSize): void {
    this.#requireRunning('resize');
    if (this.info.pty === null)
      throw adapterErrors.invalidRequest(`process ${this.info.pid} has no terminal to resize`, {
        pid: this.info.pid,
      });
    this.info.pty = size;
    this.#driver.resize(size);
  }

  signal(signal: ProcessSignal): void {
    this.#requireRunning('signal');
    this.#driver.signal(signal);
  }

  kill(): void {
    this.#driver.kill();
  }

  #requireRunning(what: string): void {
    if (this.ended)
      throw adapterErrors.invalidState(
        `cannot ${what} process ${this.info.pid}: it exited with code ${this.info.exitCode}`,
        { pid: this.info.pid, exitCode: this.info.exitCode },
      );
  }

  #pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#driver.pauseOutput();
  }

  #resumeIfRoom(): void {
    if (this.#paused && this.#unreadBytes < this.#limits.maxUnreadBytes) {
      this.#paused = false;
      this.#driver.resumeOutput();
    }
  }
}

/** The processes of a backend's instances, by instance ref and pid. */
export class ProcessTable {
  readonly #limits: ProcessLimits;
  readonly #byInstance = new Map<string, { nextPid: number; processes: Map<number, TrackedProcess> }>();

  constructor(limits: Partial<ProcessLimits> = {}) {
    this.#limits = { ...defaultProcessLimits, ...limits };
  }

  get limits(): ProcessLimits {
    return this.#limits;
  }

  /**
   * Registers a process the caller is about to start: the driver is made by `launch` with the tracked
   * process to report its output and exit to. Refused past the instance's process limit.
   */
  start(
    ref: string,
    request: ProcessStartRequest,
    launch: (process: TrackedProcess) => ProcessDriver,
  ): TrackedProcess {
    const instance = this.#byInstance.get(ref) ?? { nextPid: 1, processes: new Map() };
    const live = [...instance.processes.values()].filter((process) => !process.ended).length;
    if (live >= this.#limits.maxPerInstance)
      throw new ApiError(
        'quota_exceeded',
        `a sandbox runs at most ${this.#limits.maxPerInstance} interactive processes at once`,
        { limit: this.#limits.maxPerInstance },
      );
    this.#byInstance.set(ref, instance);
    const pid = instance.nextPid++;
    const info: ProcessInfo = {
      pid,
      argv: request.shell ? ['/bin/sh', '-c', ...request.argv] : [...request.argv],
      cwd: request.cwd ?? '/',
      pty: request.pty ?? null,
      tag: request.tag ?? null,
      startedAt: new Date().toISOString(),
      exitCode: null,
      stdinOpen: true,
      attached: 0,
    };
    let driver: ProcessDriver | undefined;
    const tracked = new TrackedProcess(
      info,
      {
        write: (data) => driver?.write(data),
        pendingInput: () => driver?.pendingInput() ?? 0,
        closeStdin: () => driver?.closeStdin(),
        resize: (size) => driver?.resize(size),
        signal: (signal) => driver?.signal(signal),
        pauseOutput: () => driver?.pauseOutput(),
        resumeOutput: () => driver?.resumeOutput(),
        kill: () => driver?.kill(),
      },
      this.#limits,
    );
    driver = launch(tracked);
    instance.processes.set(pid, tracked);
    return tracked;
  }

  /** Called by the driver when its process ended: kept listed for a while with its exit code. */
  ended(ref: string, process: TrackedProcess, exitCode: number): void {
    process.exited(exitCode);
    setTimeout(() => {
      const instance = this.#byInstance.get(ref);
      if (instance?.processes.get(process.info.pid) === process) instance.processes.delete(process.info.pid);
    }, this.#limits.keepEndedMs).unref();
  }

  list(ref: string): ProcessInfo[] {
    return [...(this.#byInstance.get(ref)?.processes.values() ?? [])].map((process) => ({ ...process.info }));
  }

  get(ref: string, pid: number): TrackedProcess {
    const found = this.#byInstance.get(ref)?.processes.get(pid);
    if (found === undefined)
      throw new ApiError('not_found', `no process ${pid} in this sandbox (it never ran, or ended long ago)`, {
        pid,
      });
    return found;
  }

  /** Ends every process of an instance (its delete or stop). */
  endAll(ref: string): void {
    for (const process of this.#byInstance.get(ref)?.processes.values() ?? []) process.kill();
    this.#byInstance.delete(ref);
  }

  /** Ends every process (the local runtime's shutdown). */
  endEverything(): void {
    for (const ref of [...this.#byInstance.keys()]) this.endAll(ref);
  }
}
