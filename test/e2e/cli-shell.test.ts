import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/** CI installs util-linux's script and a vi (.ci/run): there, the terminal's tests must run. */
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
if (!hasScript && process.env.CI !== undefined) throw new Error('script (util-linux) is missing');

/**
 * `differently sandboxes shell` in a real terminal: util-linux's `script` gives the CLI a pseudo-terminal
 * (raw mode, a size, SIGWINCH) and this test types into it, against the local runtime's devhost pool.
 */
describe.runIf(hasScript)('differently sandboxes shell, in a pseudo-terminal', () => {
  let e: E2e;
  let sandboxId: string;

  beforeAll(async () => {
    e = await startE2e();
    sandboxId = (await e.running('local')).id;
  }, 60_000);

  afterAll(async () => {
    await e?.stop();
  });

  /** The CLI under `script`: what it printed so far, a way to type, and its exit code. */
  function terminal(args: string[]) {
    const command = [process.execPath, 'cli/bin.ts', 'sandboxes', 'shell', sandboxId, ...args]
      .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
      .join(' ');
    const child: ChildProcessWithoutNullStreams = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        TERM: 'xterm',
        DIFFERENTLY_ENDPOINT: e.runtime.url,
        DIFFERENTLY_API_KEY: e.key,
      },
    });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    return {
      screen: () => screen,
      type: (text: string) => child.stdin.write(text),
      exited,
      kill: () => child.kill('SIGKILL'),
    };
  }

  it('runs python3 -i: state kept between lines, and its exit code comes through', async () => {
    const t = terminal(['--', 'python3', '-i', '-q']);
    try {
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('>>>');
      t.type('x = 6\r');
      t.type('print(x * 7)\r');
      await expect.poll(t.screen, { timeout: 20_000 }).toMatch(/\b42\b/);
      t.type('import sys; sys.exit(9)\r');
      expect(await t.exited).toBe(9);
    } finally {
      t.kill();
    }
  }, 60_000);

  it('runs vi in the login shell: a file typed in vi is saved, then the shell exits with its code', async () => {
    const t = terminal([]);
    try {
      t.type('echo ready-$((40 + 2))\r');
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('ready-42');
      t.type('vi /tmp/note.txt\r');
      // vi draws its screen (the empty file's tildes) before it takes keys.
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('~');
      t.type('ihello from vi');
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('hello from vi');
      // Esc alone, and only then the command: an Esc with a key right behind it reads as Alt+key.
      const before = t.screen().length;
      t.type('\x1b');
      await expect.poll(() => t.screen().length, { timeout: 20_000 }).toBeGreaterThan(before);
      t.type(':wq\r');
      // Typed before vi has quit, the next line would be vi's input.
      await expect
        .poll(t.screen, { timeout: 20_000 })
        .toMatch(/note\.txt" \[New\] 1L, 14B written[\s\S]*\$ $/);
      t.type('cat /tmp/note.txt | tr a-z A-Z\r');
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('HELLO FROM VI');
      t.type('exit 4\r');
      expect(await t.exited).toBe(4);
    } finally {
      t.kill();
    }
    const saved = await e.api.get(`/v1/sandboxes/${sandboxId}/files/content?path=/tmp/note.txt`, e.key);
    expect(saved.text).toBe('hello from vi\n');
  }, 60_000);
});
