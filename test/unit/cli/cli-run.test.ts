import { describe, expect, it } from 'vitest';
import { run } from '../../../cli/differently.ts';

/** The CLI in process: what it writes and the exit code, with no child process. */
async function cli(argv: string[], env: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (chunk) => (stdout += String(chunk)) },
    stderr: { write: (chunk) => (stderr += String(chunk)) },
    env,
  });
  return { code, stdout, stderr };
}

describe('the CLI as a function', () => {
  it('prints the overview and each command’s usage, and exits 0 for --help', async () => {
    const overview = await cli(['--help']);
    expect(overview.code).toBe(0);
    expect(overview.stdout).toContain('Usage: differently <command> [options]');
    const group = await cli(['snapshots', '--help']);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('differently snapshots create <sandbox-id>');
  });

  it('exits 2 with the usage for an unknown command or action, and for a missing argument', async () => {
    const command = await cli(['teleport']);
    expect(command.code).toBe(2);
    expect(command.stderr).toMatch(/^differently: unknown command "teleport"/);
    expect(command.stdout).toBe('');
    const action = await cli(['sandboxes', 'explode'], {
      DIFFERENTLY_ENDPOINT: 'http://127.0.0.1:9',
      DIFFERENTLY_API_KEY: 'k',
    });
    expect(action.code).toBe(2);
    expect(action.stderr).toMatch(/^differently sandboxes: unknown action "explode"/);
    expect(action.stderr).toContain('differently sandboxes create');
    const missing = await cli(['sandboxes', 'get'], {
      DIFFERENTLY_ENDPOINT: 'http://127.0.0.1:9',
      DIFFERENTLY_API_KEY: 'k',
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing <id>');
  });

  it('asks for an endpoint and a key before calling the API, and refuses unknown options', async () => {
    const unset = await cli(['sandboxes', 'list']);
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('set --endpoint and --key');
    const unknown = await cli(['sandboxes', 'list', '--colour', 'red']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^differently: unknown option --colour \(differently <command> --help/);
    expect(unknown.stderr).not.toContain('positional');
  });

  it('names the endpoint it could not reach', async () => {
    const down = await cli(['sandboxes', 'list'], {
      DIFFERENTLY_ENDPOINT: 'http://127.0.0.1:9',
      DIFFERENTLY_API_KEY: 'k',
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: .*127\.0\.0\.1:9/);
  });

  it('prints one action’s usage for `<group> <action> --help`', async () => {
    const help = await cli(['sandboxes', 'list', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('differently sandboxes list');
    expect(help.stdout).not.toContain('differently sandboxes create');
  });

  it('answers preflight in JSON with --json', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const path = join(mkdtempSync(join(tmpdir(), 'preflight-')), 'differently.json');
    writeFileSync(path, JSON.stringify({ pools: [{ name: 'x', adapter: 'nope' }] }));
    const checked = await cli(['preflight', '--config', path, '--json']);
    expect(checked.code).toBe(1);
    expect(JSON.parse(checked.stdout)).toEqual({
      config: path,
      ok: false,
      pools: 1,
      problems: [expect.stringContaining('pools[0].adapter: adapter must be one of')],
      notes: [],
    });
  });

  it('refuses a number option that is not a whole number before calling the API', async () => {
    const env = { DIFFERENTLY_ENDPOINT: 'http://127.0.0.1:9', DIFFERENTLY_API_KEY: 'k' };
    for (const argv of [
      ['sandboxes', 'create', '--ttl', 'abc'],
      ['sandboxes', 'update', 'sbx_01J00000000000000000000000', '--ttl', '1.5'],
      ['exec', 'sbx_01J00000000000000000000000', '--timeout', '0', '--', 'true'],
      ['ports', 'sbx_01J00000000000000000000000', 'http'],
    ]) {
      const result = await cli(argv, env);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr, argv.join(' ')).toMatch(/^--(ttl|timeout|port) takes a whole number/);
    }
  });
});
