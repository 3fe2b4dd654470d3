import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';

const root = new URL('../../', import.meta.url).pathname;

/** The README's CLI session, as a user pastes it. */
function session(): string {
  const readme = readFileSync(new URL('README.md', new URL('../../', import.meta.url)), 'utf8');
  const section = readme.slice(readme.indexOf('## A first session with the CLI'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('the README has no CLI session');
  return block;
}

describe("the README's CLI session", () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startLocalRuntime({ sweepIntervalSeconds: 0, reconcileIntervalSeconds: 0 });
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  it('pastes as is into a shell in the repository, against npm start', async () => {
    // Only the address differs from `npm start`'s default port. As in an interactive shell, a failing
    // command does not stop the session (one fails on purpose): every step's output is checked instead.
    const script = `set -uo pipefail\n${session().replace('http://127.0.0.1:8080', runtime.url)}`;
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          'bash',
          ['-c', script],
          {
            cwd: root,
            env: { ...process.env, ADMIN: runtime.adminKey },
            timeout: 240_000,
            maxBuffer: 16 << 20,
          },
          (error, out, err) =>
            resolve({
              code: error === null ? 0 : Number((error as { code?: number }).code ?? 1),
              stdout: out,
              stderr: err,
            }),
        );
      },
    );
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    // No step failed: the CLI prints `error: <code>: <message>` for every failure, and usage on misuse.
    expect(stderr, stderr).not.toMatch(/^error: |^Usage:|missing </m);
    expect(stdout).toContain('exit code: 3');
    // The sandbox's command reads the file the files API wrote, at the same path.
    expect(stdout).toContain(
      readFileSync(new URL('examples/notes.txt', new URL('../../', import.meta.url)), 'utf8'),
    );
    expect(stdout).toMatch(/examples\/differently\.json: ok \(2 pools\)/);
    expect(stdout).toContain('lab-fleet');
    expect(stdout).toContain('external placement: allowed');
  }, 300_000);
});
