import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { cellInput } from '../../../lib/e2b/code-interpreter.ts';

const line = z.union([
  z.object({ id: z.string(), append: z.string() }),
  z.object({ id: z.string(), run: z.object({ env_vars: z.record(z.string(), z.string()) }) }),
]);

describe("a cell's input to the kernel", () => {
  it('is whole lines in writes under 64 KiB, never cutting a surrogate pair, the run request last', () => {
    const code = `${'x'.repeat(8191)}😀${'\u0001'.repeat(30_000)}`;
    const writes = cellInput('c1', code, { A: 'b' });
    expect(writes.length).toBeGreaterThan(1);
    for (const write of writes) {
      expect(Buffer.byteLength(write)).toBeLessThanOrEqual(64 * 1024);
      expect(write.endsWith('\n')).toBe(true);
    }
    const lines = writes
      .join('')
      .split('\n')
      .filter((text) => text !== '')
      .map((text) => line.parse(JSON.parse(text)));
    const pieces = lines.flatMap((parsed) => ('append' in parsed ? [parsed.append] : []));
    // Each piece is text on its own (no lone surrogate), and together they are the code.
    for (const piece of pieces) expect(piece.isWellFormed()).toBe(true);
    expect(pieces.join('')).toBe(code);
    expect(lines.at(-1)).toEqual({ id: 'c1', run: { env_vars: { A: 'b' } } });
  });

  it('is the run request alone for an empty cell', () => {
    expect(cellInput('c2', '', {})).toEqual([`${JSON.stringify({ id: 'c2', run: { env_vars: {} } })}\n`]);
  });
});
