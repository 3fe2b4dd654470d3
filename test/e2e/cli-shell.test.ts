import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/** The terminal a descendant of `root` (the CLI, under script) reads from; undefined until it runs. */
function terminalOf(root: number | undefined): string | undefined {
  if (root === undefined) return undefined;
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const descends = (pid: number): boolean => {
    for (let at = parentOf.get(pid); at !== undefined && at > 1; at = parentOf.get(at))
      if (at === root) return true;
    return false;
  };
  for (const pid of parentOf.keys()) {
    if (!descends(pid)) continue;
    try {
      const target = readlinkSync(`/proc/${pid}/fd/0`);
      if (target.startsWith('/dev/pts/')) return target;
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

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
  function terminal(args: string[], setUp = '') {
    const command = `${setUp}exec ${[process.execPath, 'cli/bin.ts', 'sandboxes', 'shell', sandboxId, ...args]
      .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
      .join(' ')}`;
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
      pid: child.pid,
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

  it('gives the process a terminal of its own size, and resizes it when the terminal is resized (SIGWINCH)', async () => {
    const t = terminal([], 'stty cols 91 rows 27; ');
    try {
      t.type('stty size\r');
      await expect.poll(t.screen, { timeout: 20_000 }).toContain('27 91');
      // The CLI's terminal: the pseudo-terminal script made, its standard input. Setting its size makes the
      // kernel send SIGWINCH to the CLI, as a terminal window's resize does.
      const tty = await expect
        .poll(() => terminalOf(t.pid), { timeout: 20_000 })
        .toMatch(/^\/dev\/pts\/\d+$/)
        .then(() => terminalOf(t.pid) as string);
      expect(spawnSync('stty', ['-F', tty, 'cols', '120', 'rows', '40']).status).toBe(0);
      // The resize reaches the sandbox's terminal as a request of its own: ask until it has.
      await expect
        .poll(
          () => {
            t.type('stty size\r');
            return t.screen();
          },
          { timeout: 20_000, interval: 500 },
        )
        .toContain('40 120');
      t.type('exit 0\r');
      expect(await t.exited).toBe(0);
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
