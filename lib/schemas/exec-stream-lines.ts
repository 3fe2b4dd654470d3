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
 * Reads an NDJSON body of `schema`'s lines as its chunks arrive (cut anywhere, even inside a character):
 * each push gives the lines it completed. Blank lines are the server's keep-alive and are skipped; a line
 * that is not one of the schema's throws. Text after the last newline waits for the next chunk: at the end
 * of the body it is a line cut off, never read.
 */
export class NdjsonLineReader<T> {
  readonly #decoder = new TextDecoder();
  readonly #schema: z.ZodMiniType<T>;
  #buffer = '';

  constructor(schema: z.ZodMiniType<T>) {
    this.#schema = schema;
  }

  push(chunk: Uint8Array | string): T[] {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    const lines: T[] = [];
    for (let newline = this.#buffer.indexOf('\n'); newline >= 0; newline = this.#buffer.indexOf('\n')) {
      const text = this.#buffer.slice(0, newline).trim();
      this.#buffer = this.#buffer.slice(newline + 1);
      if (text !== '') lines.push(this.#schema.parse(JSON.parse(text)));
    }
    return lines;
  }
}

/** A streamed exec's lines (see NdjsonLineReader). */
export class ExecStreamLineReader extends NdjsonLineReader<ExecStreamLine> {
  constructor() {
    super(execStreamLineSchema);
  }
}

/** The lines of an NDJSON body of `schema`'s lines. */
export async function* ndjsonLines<T>(
  schema: z.ZodMiniType<T>,
  chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
): AsyncGenerator<T> {
  const reader = new NdjsonLineReader(schema);
  for await (const chunk of chunks) yield* reader.push(chunk);
}

/** The lines of a streamed exec's body (see ExecStreamLineReader). */
export function execStreamLines(
  chunks: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
): AsyncGenerator<ExecStreamLine> {
  return ndjsonLines(execStreamLineSchema, chunks);
}
