import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { startValidatingProxy, type ValidatingProxy } from '../helpers/validating-proxy.ts';

const root = new URL('../../', import.meta.url).pathname;

/** A README session (the first sh block under `heading`), as a user pastes it. */
function session(heading = '## A first session with the CLI'): string {
  const readme = readFileSync(new URL('README.md', new URL('../../', import.meta.url)), 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`the README has no session under ${heading}`);
  return block;
}

/** Runs a pasted session with bash in the repository; what it printed and its exit code. */
function paste(script: string, env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['-c', script],
      { cwd: root, env: { ...process.env, ...env }, timeout: 240_000, maxBuffer: 16 << 20 },
      (error, out, err) =>
        resolve({
          code: error === null ? 0 : Number((error as { code?: number }).code ?? 1),
          stdout: out,
          stderr: err,
        }),
    );
  });
}

describe("the README's CLI session", () => {
  let runtime: LocalRuntime;
  // The sessions go through a validating gateway: every request and answer must be in docs/openapi.json.
  let gateway: ValidatingProxy;
  beforeAll(async () => {
    runtime = await startLocalRuntime({ sweepIntervalSeconds: 0, reconcileIntervalSeconds: 0 });
    gateway = await startValidatingProxy(runtime.url);
  });
  afterAll(async () => {
    await gateway?.close();
    await runtime?.stop();
  });

  it('pastes as is into a shell in the repository, against npm start', async () => {
    // Only the address differs from `npm start`'s default port. As in an interactive shell, a failing
    // command does not stop the session (one fails on purpose): every step's output is checked instead.
    const script = `set -uo pipefail\n${session().replace('http://127.0.0.1:8080', gateway.url)}`;
    const before = gateway.checked();
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
    expect(gateway.checked() - before).toBeGreaterThan(15);
    expect(gateway.problems).toEqual([]);
  }, 300_000);

  it('the curl session pastes as is too', async () => {
    const before = gateway.checked();
    const script = `set -uo pipefail\n${session('## A first session with curl')
      .replace('http://127.0.0.1:8080', gateway.url)
      .replace('ADMIN=<the admin key npm start printed>', `ADMIN=${runtime.adminKey}`)}`;
    const { code, stdout, stderr } = await paste(script, {});
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain('"running"');
    expect(stdout).toContain('"stdout":"hello\\n"');
    expect(stdout).toContain('"exitCode":3');
    expect(stdout).toContain('{"stream":"stdout","data":"step 3\\n"}');
    // The file written through the API, read back through the API.
    expect(stdout).toMatch(/^hi/m);
    expect(stdout).toContain('"terminating"');
    expect(gateway.checked() - before).toBeGreaterThan(10);
    expect(gateway.problems).toEqual([]);
  }, 120_000);

  it('the E2B session pastes as is too, after the CLI session made an org', async () => {
    const org = await fetch(`${runtime.url}/v1/admin/orgs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${runtime.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'e2b-readme' }),
    });
    const { id } = (await org.json()) as { id: string };
    const script = `set -euo pipefail\n${session('## E2B SDKs: two variables').replaceAll('http://127.0.0.1:8080', runtime.url)}`;
    const { code, stdout, stderr } = await paste(script, {
      DIFFERENTLY_ENDPOINT: runtime.url,
      DIFFERENTLY_API_KEY: runtime.adminKey,
      ORG: id,
    });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toBe('hi from e2b\n');
  }, 120_000);
});
