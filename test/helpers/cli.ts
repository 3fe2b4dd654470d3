import { run } from '../../cli/differently.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the differently CLI in this process (`run(argv, io)`, what the bin calls), with the test's
 * environment on top of this one: the same parsing, output and exit codes as a child process, without a
 * Node start per call (test/e2e/sdk-package.test.ts runs the installed bin itself).
 */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const out: (string | Uint8Array)[] = [];
  const err: (string | Uint8Array)[] = [];
  const code = await run(args, {
    stdout: { write: (chunk) => out.push(chunk) },
    stderr: { write: (chunk) => err.push(chunk) },
    env: { ...process.env, ...env },
  });
  const text = (chunks: (string | Uint8Array)[]) =>
    chunks.map((chunk) => (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))).join('');
  return { code, stdout: text(out), stderr: text(err) };
}
