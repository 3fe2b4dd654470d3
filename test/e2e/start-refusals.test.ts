import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

function startWith(config: unknown): Promise<{ code: number; stderr: string; stdout: string }> {
  const path = join(mkdtempSync(join(tmpdir(), 'refused-')), 'differently.json');
  writeFileSync(path, JSON.stringify(config));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['infra/local/main.ts', '--port', '0', '--config', path],
      { cwd: root, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : Number((error as { code?: number }).code ?? 1),
          stdout,
          stderr,
        }),
    );
  });
}

describe('npm start refuses what preflight refuses', () => {
  it('names each bad field of the config, with no stack trace, and starts nothing', async () => {
    const refused = await startWith({
      pools: [
        { name: 'x', adapter: 'firecracker' },
        { name: 'dtn', adapter: 'daytona', config: { apiURL: 'https://app.daytona.io/api' } },
      ],
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('pools[0].adapter: adapter must be one of');
    expect(refused.stderr).toContain('pools[1].credentials: the daytona adapter needs credentials');
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.stdout).not.toContain('running at');
  });
});
