import type { ExecResult } from '../schemas/sandboxes.ts';

/**
 * An exec result as a reader wants it (an agent reading MCP's text): the exit code, what was cut or timed
 * out, then each non-empty stream under its name.
 */
export function execResultText(result: ExecResult, outputMaxBytes: number): string {
  return [
    `exit code: ${result.exitCode}`,
    result.truncated ? `output truncated at ${outputMaxBytes} bytes per stream` : '',
    result.timedOut ? 'the command timed out' : '',
    result.stdout === '' ? '' : `--- stdout ---\n${result.stdout}`,
    result.stderr === '' ? '' : `--- stderr ---\n${result.stderr}`,
  ]
    .filter((part) => part !== '')
    .join('\n');
}
