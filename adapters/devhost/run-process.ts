import type { ExecEvent } from '../../lib/adapter/port.ts';
import { spawnInOwnGroup } from './jailed-spawn.ts';

export interface RunProcessOptions {
  /** argv; with `shell`, argv[0] is the command line given to /bin/sh -c. */
  argv: string[];
  shell: boolean;
  cwd: string;
  env: Record<string, string>;
  stdin?: string | undefined;
  /** Written to the process's fd 3 and closed (bwrap's `--args 3`): what must not be in argv or env. */
  fd3?: string | undefined;
  /** The sandbox it runs for (its pause freezes it too). */
  group?: string | undefined;
  /** The host user to run as (the control plane must be root to name another). */
  user?: { uid: number; gid: number } | undefined;
  timeoutSeconds: number;
  signal?: AbortSignal | undefined;
  /** A returned promise pauses the process's output until it settles (backpressure). */
  onOutput: (event: ExecEvent) => void | Promise<void>;
}

export interface RunProcessResult {
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
}

/** Exit code reported for a command killed by its timeout, as `timeout(1)` does. */
export const timeoutExitCode = 124;

/**
 * Runs one host process in its own process group (a jail's too), so a timeout kills everything it started. Output is
 * delivered as produced; the caller decides whether to buffer (with a cap) or stream it.
 */
export function runProcess(options: RunProcessOptions): Promise<RunProcessResult> {
  const started = performance.now();
  const [file, ...args] = options.shell ? ['/bin/sh', '-c', ...options.argv] : options.argv;
  return new Promise((resolve, reject) => {
    if (file === undefined) {
      reject(new Error('no command to run'));
      return;
    }
    const { child, kill: killGroup } = spawnInOwnGroup({
      argv: [file, ...args],
      fd3: options.fd3,
      group: options.group,
      user: options.user,
      cwd: options.cwd,
      env: options.env,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutSeconds * 1000);
    const onAbort = () => killGroup();
    // Aborted while the caller was still setting up (a delete racing an exec): never run it to its end.
    if (options.signal?.aborted) killGroup();
    else options.signal?.addEventListener('abort', onAbort, { once: true });

    // While the consumer is behind, both pipes are paused: the command blocks on a full pipe instead of
    // the control plane buffering its output.
    const deliver = (event: ExecEvent) => {
      const waiting = options.onOutput(event);
      if (waiting === undefined) return;
      child.stdout.pause();
      child.stderr.pause();
      void waiting.finally(() => {
        child.stdout.resume();
        child.stderr.resume();
      });
    };
    child.stdout.setEncoding('utf8').on('data', (data: string) => deliver({ stream: 'stdout', data }));
    child.stderr.setEncoding('utf8').on('data', (data: string) => deliver({ stream: 'stderr', data }));
    // A command that does not read stdin closes the pipe early; that is not an error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');

    child.on('error', (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      const exitCode = timedOut
        ? timeoutExitCode
        : (code ?? (signal !== null ? 128 + signalNumber(signal) : 1));
      resolve({ exitCode, timedOut, durationMs: Math.round(performance.now() - started) });
    });
  });
}

function signalNumber(signal: NodeJS.Signals): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return numbers[signal] ?? 0;
}

/** Collects a stream's output up to a byte cap; past it, the text is cut and `truncated` is set. */
export class CappedBuffer {
  readonly #cap: number;
  #parts: string[] = [];
  #bytes = 0;
  truncated = false;

  constructor(capBytes: number) {
    this.#cap = capBytes;
  }

  push(data: string): void {
    if (this.truncated) return;
    const size = Buffer.byteLength(data, 'utf8');
    if (this.#bytes + size <= this.#cap) {
      this.#parts.push(data);
      this.#bytes += size;
      return;
    }
    const room = this.#cap - this.#bytes;
    // Cut on a byte boundary, then drop a split multi-byte character at the end.
    this.#parts.push(
      Buffer.from(data, 'utf8')
        .subarray(0, room)
        .toString('utf8')
        .replace(/\uFFFD$/, ''),
    );
    this.#bytes = this.#cap;
    this.truncated = true;
  }

  text(): string {
    return this.#parts.join('');
  }
}
