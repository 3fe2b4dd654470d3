import { vi } from 'vitest';
import { jsonObject, parseJson } from './json.ts';

/**
 * Captures what Powertools writes (its JSON log lines, errors and warnings going to stderr, and EMF
 * records) until `lines()` is called, which restores both streams and returns every JSON line written
 * meanwhile, parsed, in order.
 */
export function capturePowertoolsOutput() {
  const chunks: string[] = [];
  const record = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(record);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(record);
  return {
    lines(): Record<string, unknown>[] {
      out.mockRestore();
      err.mockRestore();
      return chunks
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => parseJson(jsonObject, line));
    },
  };
}
