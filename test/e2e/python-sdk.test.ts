import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/**
 * The Python SDK's own suite (sdk/python/tests, python3 -m unittest): it starts the local runtime itself,
 * on this Node, and checks every OpenAPI operation has a method, the generated models are current, and
 * the client works end to end, installed from its folder.
 */
describe('the Python SDK', () => {
  it('passes its unittest suite against the local runtime', () => {
    const run = spawnSync('python3', ['-m', 'unittest', 'discover', '-s', 'sdk/python/tests', '-v'], {
      cwd: root,
      env: { ...process.env, DIFFERENTLY_NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1' },
      encoding: 'utf8',
      timeout: 240_000,
    });
    const output = `${run.stdout}${run.stderr}`;
    expect(output, output).toMatch(/\nOK\b/);
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/Ran \d+ tests/);
  });
});
