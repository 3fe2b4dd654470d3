import { describe, expect, it } from 'vitest';
import { linesOf } from '../../../adapters/httpx/lines.ts';

async function* chunks(...parts: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? new TextEncoder().encode(part) : part;
}

async function all(body: AsyncIterable<Uint8Array>, limit?: Parameters<typeof linesOf>[1]) {
  const lines: string[] = [];
  for await (const line of linesOf(body, limit)) lines.push(line);
  return lines;
}

describe('lines of a streamed body', () => {
  it('yields complete lines across chunks, a character split between chunks whole, and the last fragment', async () => {
    const euro = new TextEncoder().encode('€'); // three bytes
    const body = chunks(
      '{"a":1}\n{"b":',
      '2}\n',
      new Uint8Array([...new TextEncoder().encode('x'), euro[0] ?? 0]),
      euro.slice(1),
      '\ntail',
    );
    expect(await all(body)).toEqual(['{"a":1}', '{"b":2}', 'x€', 'tail']);
  });

  it('ends with no fragment when the body ends on a newline, and stops at a pending line over the limit', async () => {
    expect(await all(chunks('one\n', 'two\n'))).toEqual(['one', 'two']);
    const tooLong = () => new Error('line too long');
    await expect(all(chunks('ok\n', 'x'.repeat(20)), { maxLineBytes: 10, tooLong })).rejects.toThrow(
      'line too long',
    );
  });
});
