import type { ExecEvent } from '../../lib/adapter/port.ts';
import type { ApiError } from '../../lib/errors.ts';
import { LineSplitter } from '../httpx/lines.ts';
import type { OpenSandboxConfig } from './config.ts';
import { streamEventSchema } from './wire.ts';

/**
 * execd's POST /command answer, read line by line (SSE `data:` lines or bare JSON lines): output goes out
 * in whole lines per stream, and the end says how the command exited. A line that is not an event means
 * execd is not speaking its protocol: `unavailable`, never a guessed exit.
 */
export class ExecdEvents {
  readonly #splitters: Record<'stdout' | 'stderr', LineSplitter>;
  readonly #emit: (event: ExecEvent) => void;
  readonly #unavailable: (message: string) => ApiError;
  #exitCode: number | undefined;
  #failure: string | undefined;

  constructor(
    emit: (event: ExecEvent) => void,
    lineEndings: OpenSandboxConfig['lineEndings'],
    unavailable: (message: string) => ApiError,
  ) {
    this.#emit = emit;
    this.#unavailable = unavailable;
    const lf = lineEndings === 'lf';
    const out = (stream: 'stdout' | 'stderr') =>
      new LineSplitter((data) => emit({ stream, data: lf ? data.replaceAll('\r\n', '\n') : data }));
    this.#splitters = { stdout: out('stdout'), stderr: out('stderr') };
  }

  push(line: string): void {
    const text = line.startsWith('data:') ? line.slice(5).trim() : line.trim();
    if (text === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw this.#unavailable('execd sent an event that is not JSON');
    }
    const event = streamEventSchema.safeParse(raw);
    if (!event.success) throw this.#unavailable('execd sent an event without a type');
    const { type } = event.data;
    if (type === 'stdout' || type === 'stderr') this.#splitters[type].push(event.data.text ?? '');
    else if (type === 'execution_complete') this.#exitCode = 0;
    else if (type === 'error') {
      const value = event.data.error?.evalue ?? '';
      if (/^-?\d+$/.test(value.trim())) this.#exitCode = Number(value.trim());
      else this.#failure = value || event.data.error?.ename || 'the command failed to start';
    }
  }

  /** After the last line: flushes partial lines and answers the exit (124 past the request's timeout). */
  end(timeoutMs: number | undefined, elapsedMs: number): { exitCode: number; timedOut: boolean } {
    this.#splitters.stdout.end();
    this.#splitters.stderr.end();
    if (this.#failure !== undefined) {
      this.#emit({ stream: 'stderr', data: `${this.#failure}\n` });
      return { exitCode: 127, timedOut: false };
    }
    // execd kills a timed-out command's process group; its exit is then a signal's, not the command's.
    if (timeoutMs !== undefined && elapsedMs >= timeoutMs && this.#exitCode !== 0) {
      return { exitCode: 124, timedOut: true };
    }
    if (this.#exitCode === undefined)
      throw this.#unavailable('the exec stream ended without completion or error');
    return { exitCode: this.#exitCode, timedOut: false };
  }
}
