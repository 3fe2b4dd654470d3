import * as z from '../zod.ts';

/**
 * One line of a streamed exec (NDJSON): output as produced, then exactly one `{exitCode}` or `{error}`.
 * The objects are not strict: a client reads the lines of a newer server too.
 */
export const execStreamLineSchema = z.union([
  z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string() }),
  z.object({ exitCode: z.int() }),
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
]);
export type ExecStreamLine = z.infer<typeof execStreamLineSchema>;

/**
 * Reads a streamed exec's body as its chunks arrive (cut anywhere, even inside a character): each push
 * gives the lines it completed. Blank lines are the server's keep-alive and are skipped; a line that is
 * not one of the lines above throws (the body is not an exec stream). Text after the last newline waits
 * for the next chunk: at the end of the body it is a line cut off, never read.
 */
export class ExecStreamLineReader {
  readonly #decoder = new TextDecoder();
  #buffer = '';

  push(chunk: Uint8Array | string): ExecStreamLine[] {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    const lines: ExecStreamLine[] = [];
    for (let newline = this.#buffer.indexOf('\n'); newline >= 0; newline = this.#buffer.indexOf('\n')) {
      const text = this.#buffer.slice(0, newline).trim();
      this.#buffer = this.#buffer.slice(newline + 1);
      if (text !== '') lines.push(execStreamLineSchema.parse(JSON.parse(text)));
    }
    return lines;
  }
}

/** The lines of a streamed exec's body (see ExecStreamLineReader). */
export async function* execStreamLines(
  chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
): AsyncGenerator<ExecStreamLine> {
  const reader = new ExecStreamLineReader();
  for await (const chunk of chunks) yield* reader.push(chunk);
}
