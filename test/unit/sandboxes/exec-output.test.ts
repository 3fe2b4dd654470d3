import { describe, expect, it } from 'vitest';
import { awsLimits } from '../../../lib/limits.ts';
import { boundExecResult, cutUtf8 } from '../../../lib/sandboxes/exec-output.ts';

const result = (stdout: string, stderr = '') => ({
  exitCode: 0,
  stdout,
  stderr,
  durationMs: 1,
  truncated: false,
  timedOut: false,
});

describe('exec output bounds', () => {
  it('cuts UTF-8 between characters, never inside one', () => {
    // 'é' is two bytes: a cut at an odd byte count backs off to the character boundary.
    expect(cutUtf8('éééé', 5)).toEqual({ text: 'éé', cut: true });
    expect(cutUtf8('abc', 3)).toEqual({ text: 'abc', cut: false });
    expect(cutUtf8('abc', 0)).toEqual({ text: '', cut: true });
  });

  it('keeps each stream to the cap and says truncated; leaves small output alone', () => {
    const bounded = boundExecResult(result('a'.repeat(5000), 'b'.repeat(10)), 1024);
    expect(bounded.stdout.length).toBe(1024);
    expect(bounded.stderr).toBe('b'.repeat(10));
    expect(bounded.truncated).toBe(true);
    expect(boundExecResult(result('ok\n'), 1024)).toEqual(result('ok\n'));
  });

  it("keeps output that JSON escaping would blow up (control characters) within Lambda's response limit", () => {
    const control = '\u0001'.repeat(1024 * 1024);
    const bounded = boundExecResult(result(control, control), 1024 * 1024);
    const size = Buffer.byteLength(JSON.stringify(bounded));
    expect(size).toBeLessThan(awsLimits.maxBufferedResponseBytes);
    expect(bounded.truncated).toBe(true);
    expect(bounded.stdout.length).toBeGreaterThan(0);
  });
});
