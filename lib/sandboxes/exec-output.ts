import { awsLimits } from '../limits.ts';
import type { ExecResult } from '../schemas/sandboxes.ts';

/** Room left in a buffered response for everything but stdout and stderr (the envelope, other fields). */
const envelopeReserveBytes = 64 * 1024;

/** `text` cut to at most `maxBytes` of UTF-8, never inside a character. */
export function cutUtf8(text: string, maxBytes: number): { text: string; cut: boolean } {
  if (text.length <= maxBytes / 3 || Buffer.byteLength(text) <= maxBytes) return { text, cut: false };
  let end = Math.max(0, maxBytes);
  const bytes = Buffer.from(text);
  // Back off UTF-8 continuation bytes (top bits 10) so the cut falls between characters.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), cut: true };
}

/**
 * A synchronous exec result as the API may answer it, whatever the adapter returned: each stream at
 * most `maxBytes` (api.execOutputMaxBytes), and the two together, JSON-escaped, within Lambda's buffered
 * response limit. Anything cut sets `truncated`.
 */
export function boundExecResult(result: ExecResult, maxBytes: number): ExecResult {
  const stdout = cutUtf8(result.stdout, maxBytes);
  const stderr = cutUtf8(result.stderr, maxBytes);
  let bounded: ExecResult = {
    ...result,
    stdout: stdout.text,
    stderr: stderr.text,
    truncated: result.truncated || stdout.cut || stderr.cut,
  };
  const budget = awsLimits.maxBufferedResponseBytes - envelopeReserveBytes;
  // Escaping (control characters become \u00XX) can grow the text: cut again until the JSON fits.
  for (let share = Math.floor(budget / 2); ; share = Math.floor(share / 2)) {
    const size =
      Buffer.byteLength(JSON.stringify(bounded.stdout)) + Buffer.byteLength(JSON.stringify(bounded.stderr));
    if (size <= budget) return bounded;
    const out = cutUtf8(bounded.stdout, Math.floor(share / 6));
    const err = cutUtf8(bounded.stderr, Math.floor(share / 6));
    bounded = { ...bounded, stdout: out.text, stderr: err.text, truncated: true };
  }
}
