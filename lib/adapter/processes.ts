/**
 * Interactive processes (features `exec.stdin` and `exec.pty`): a process started in a sandbox that
 * outlives the request that started it, fed its input by later requests, resized, signalled and attached
 * to again. Everything about a process lives in the backend, named by the instance's ref and the process's
 * pid: any container of any function can answer any call, so nothing relies on the container that
 * started it (on AWS the output stream is held by the streaming function for 15 minutes at most, and a
 * client attaches again after).
 */
import type { CallOptions, ExecEmit, ExecutionAdapter } from './port.ts';

export interface TerminalSize {
  cols: number;
  rows: number;
}

export interface ProcessStartRequest {
  /** argv; with `shell` true, argv[0] is a command line given to /bin/sh -c. */
  argv: string[];
  shell: boolean;
  env: Record<string, string>;
  cwd?: string;
  /** A terminal of this size: stdout and stderr become one stream, stdin the terminal's keyboard. */
  pty?: TerminalSize;
  /** Seconds the process may live (the backend's own maximum applies). */
  timeoutSeconds: number;
  /** A name the caller gives the process (E2B's tag), listed with it. */
  tag?: string;
  /** As the sandbox's superuser (only asked of adapters that declare exec.root). */
  user?: 'root';
}

export interface ProcessInfo {
  pid: number;
  argv: string[];
  cwd: string;
  pty: TerminalSize | null;
  tag: string | null;
  startedAt: string;
  /** null while it runs. */
  exitCode: number | null;
  /** Whether its stdin is still open for writes. */
  stdinOpen: boolean;
  /**
   * Callers attached now. Output goes to them as produced; with none it waits unread. (A client that went
   * away counts until the backend sees its stream end.)
   */
  attached: number;
}

/** Output not yet taken by an attach or a read, in the order it was produced. */
export interface ProcessOutput {
  events: { stream: 'stdout' | 'stderr'; data: string }[];
  /** Output was dropped because nobody took it and the backend's unread bound was reached. */
  dropped: boolean;
  exitCode: number | null;
}

import type { ProcessSignal } from '../schemas/processes.ts';

export type { ProcessSignal };

export interface ProcessHost {
  startProcess(ref: string, request: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo>;
  /** Every process of the instance that runs, or ended and still has unread output. */
  listProcesses(ref: string, opts?: CallOptions): Promise<ProcessInfo[]>;
  /**
   * Delivers the process's unread output, then its output as produced (backpressure: a returned promise
   * from emit pauses the process's output), until it ends (its exit code) or `opts.signal` detaches the
   * caller (undefined: the process goes on).
   */
  attachProcess(ref: string, pid: number, emit: ExecEmit, opts?: CallOptions): Promise<number | undefined>;
  /** Takes the unread output without waiting for more (at most `maxBytes`). */
  readProcessOutput(ref: string, pid: number, maxBytes: number, opts?: CallOptions): Promise<ProcessOutput>;
  writeStdin(ref: string, pid: number, data: Uint8Array, opts?: CallOptions): Promise<void>;
  closeStdin(ref: string, pid: number, opts?: CallOptions): Promise<void>;
  resizeProcess(ref: string, pid: number, size: TerminalSize, opts?: CallOptions): Promise<void>;
  signalProcess(ref: string, pid: number, signal: ProcessSignal, opts?: CallOptions): Promise<void>;
}

/** ProcessHost's calls: each reaches the backend (backend-calls.ts lists them with the others). */
export const processCalls = [
  'startProcess',
  'listProcesses',
  'attachProcess',
  'readProcessOutput',
  'writeStdin',
  'closeStdin',
  'resizeProcess',
  'signalProcess',
] as const;

export const isProcessHost = (a: ExecutionAdapter): a is ExecutionAdapter & ProcessHost => {
  const record = a as unknown as Record<string, unknown>;
  return processCalls.every((name) => typeof record[name] === 'function');
};
