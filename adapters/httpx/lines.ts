/** Lines of a streamed HTTP body (NDJSON, server-sent events): what the provider adapters read. */

/**
 * The complete lines of a byte stream as they arrive (without their newline), then its last fragment if
 * it has one. UTF-8 is decoded across chunk boundaries. A pending line longer than `maxLineBytes` throws
 * what `tooLong` makes (the caller's own error), before the rest is read.
 */
export async function* linesOf(
  body: AsyncIterable<Uint8Array>,
  limit?: { maxLineBytes: number; tooLong: () => Error },
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      yield buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    if (limit !== undefined && Buffer.byteLength(buffered) > limit.maxLineBytes) throw limit.tooLong();
  }
  buffered += decoder.decode();
  if (buffered !== '') yield buffered;
}

/**
 * Splits execd's output chunks into lines as they arrive; a final fragment without a newline gains one
 * when the command ends (the seeds' line-based event stream).
 */
export class LineSplitter {
  #pending = '';
  readonly #emit: (line: string) => void;
  constructor(emit: (line: string) => void) {
    this.#emit = emit;
  }
  push(chunk: string): void {
    this.#pending += chunk;
    let newline = this.#pending.indexOf('\n');
    while (newline >= 0) {
      this.#emit(this.#pending.slice(0, newline + 1));
      this.#pending = this.#pending.slice(newline + 1);
      newline = this.#pending.indexOf('\n');
    }
  }
  end(): void {
    if (this.#pending !== '') this.#emit(`${this.#pending}\n`);
    this.#pending = '';
  }
}
