import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devhostConfigSchema } from '../../../adapters/devhost/config.ts';
import { DevhostAdapter, endDevhostCommands } from '../../../adapters/devhost/devhost-adapter.ts';
import { bubblewrapAvailable } from '../../../adapters/devhost/jail.ts';
import { effectiveFeatures } from '../../../lib/adapter/features.ts';
import type { ExecEvent } from '../../../lib/adapter/port.ts';
import { ApiError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';

const jailed = bubblewrapAvailable();
if (!jailed && process.env.CI !== undefined) throw new Error('bubblewrap is missing: .ci/run installs it');

/** Collects an attach's output until `until` holds, then detaches; the promise has the attach's answer. */
function attachUntil(
  adapter: DevhostAdapter,
  ref: string,
  pid: number,
  until: (text: string) => boolean,
): { done: Promise<{ text: string; exit: number | undefined }> } {
  const detach = new AbortController();
  let text = '';
  const done = adapter
    .attachProcess(
      ref,
      pid,
      (event: ExecEvent) => {
        text += event.data;
        if (until(text)) detach.abort();
      },
      { signal: detach.signal },
    )
    .then((exit) => ({ text, exit }));
  return { done };
}

describe.each([
  ['jailed', 'auto'],
  ['unjailed', 'none'],
] as const)('DevhostAdapter interactive processes (%s)', (_name, isolation) => {
  let root: string;
  let adapter: DevhostAdapter;
  let ref: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'devhost-proc-'));
    adapter = new DevhostAdapter(devhostConfigSchema.parse({ root, isolation }));
    ref = (
      await adapter.create({
        id: newId('sandbox'),
        installation: 'inst_proc',
        resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
        env: {},
        labels: {},
      })
    ).ref;
  });

  afterAll(async () => {
    endDevhostCommands();
    await rm(root, { recursive: true, force: true });
  });

  it('declares exec.stdin and exec.pty, which its interface backs', async () => {
    const { features } = await adapter.capabilities();
    expect(effectiveFeatures(adapter, features)).toEqual(expect.arrayContaining(['exec.stdin', 'exec.pty']));
  });

  it('feeds stdin written after start, line by line, and ends when stdin closes', async () => {
    const started = await adapter.startProcess(ref, {
      argv: ['while read -r line; do echo "got:$line"; done; echo bye'],
      shell: true,
      env: {},
      timeoutSeconds: 60,
    });
    expect(started).toMatchObject({ pid: expect.any(Number), exitCode: null, stdinOpen: true, pty: null });
    await adapter.writeStdin(ref, started.pid, Buffer.from('one\n'));
    const first = attachUntil(adapter, ref, started.pid, (text) => text.includes('got:one'));
    expect(await first.done).toEqual({ text: 'got:one\n', exit: undefined });
    // Detached, it runs on; output meanwhile waits unread for the next attach.
    await adapter.writeStdin(ref, started.pid, Buffer.from('two\n'));
    await adapter.closeStdin(ref, started.pid);
    let text = '';
    const exit = await adapter.attachProcess(ref, started.pid, (event) => {
      text += event.data;
    });
    expect({ text, exit }).toEqual({ text: 'got:two\nbye\n', exit: 0 });
    const listed = await adapter.listProcesses(ref);
    expect(listed.find((p) => p.pid === started.pid)).toMatchObject({ exitCode: 0, stdinOpen: false });
    // A write to an ended process is a clear invalid_state, never a hang.
    await expect(adapter.writeStdin(ref, started.pid, Buffer.from('x'))).rejects.toMatchObject({
      code: 'invalid_state',
    });
    await expect(adapter.writeStdin(ref, 999_999, Buffer.from('x'))).rejects.toBeInstanceOf(ApiError);
  });

  it('runs a process in a terminal of the asked size, resized later', async () => {
    const started = await adapter.startProcess(ref, {
      argv: ['/bin/sh'],
      shell: false,
      env: {},
      pty: { cols: 91, rows: 27 },
      timeoutSeconds: 60,
    });
    await adapter.writeStdin(ref, started.pid, Buffer.from('stty size; tty\n'));
    const sized = attachUntil(adapter, ref, started.pid, (text) => /\/dev\/pts\/\d+/.test(text));
    const { text } = await sized.done;
    expect(text).toContain('27 91');
    await adapter.resizeProcess(ref, started.pid, { cols: 120, rows: 40 });
    await adapter.writeStdin(ref, started.pid, Buffer.from('stty size\nexit 7\n'));
    let after = '';
    const exit = await adapter.attachProcess(ref, started.pid, (event) => {
      after += event.data;
    });
    expect(after).toContain('40 120');
    expect(exit).toBe(7);
  });

  it('delivers a signal to the process inside the sandbox', async () => {
    const started = await adapter.startProcess(ref, {
      argv: ["trap 'echo interrupted; exit 3' INT; echo ready; while :; do sleep 0.1; done"],
      shell: true,
      env: {},
      timeoutSeconds: 60,
    });
    const ready = attachUntil(adapter, ref, started.pid, (text) => text.includes('ready'));
    await ready.done;
    await adapter.signalProcess(ref, started.pid, 'SIGINT');
    let text = '';
    const exit = await adapter.attachProcess(ref, started.pid, (event) => {
      text += event.data;
    });
    expect(text).toContain('interrupted');
    expect(exit).toBe(3);
  });

  it('runs python3 -i in a terminal: state kept between inputs', async () => {
    const started = await adapter.startProcess(ref, {
      argv: ['python3', '-i', '-q'],
      shell: false,
      env: {},
      pty: { cols: 80, rows: 24 },
      timeoutSeconds: 60,
    });
    await adapter.writeStdin(ref, started.pid, Buffer.from('x = 20\n'));
    await adapter.writeStdin(ref, started.pid, Buffer.from('print(x + 22)\n'));
    const answer = attachUntil(adapter, ref, started.pid, (text) => /^42\r?$/m.test(text));
    expect((await answer.done).text).toMatch(/^42\r?$/m);
    await adapter.closeStdin(ref, started.pid);
    expect(await adapter.attachProcess(ref, started.pid, () => undefined)).toBe(0);
  });

  it('pauses every process of the sandbox where it stands, a daemon too, and continues them on resume, memory kept', async () => {
    const marker = `paused-${newId('sandbox')}`;
    // A counter in the shell's memory, and a child; in a jail a daemon that left its parent too (setsid,
    // then its parent ended: the jail's pid namespace still holds it; unjailed, nothing does).
    const child =
      isolation === 'auto'
        ? `( setsid sh -c 'while :; do sleep 0.05; done; : ${marker}' & );`
        : `sh -c 'while :; do sleep 0.05; done; : ${marker}' &`;
    const started = await adapter.startProcess(ref, {
      argv: [`${child} n=0; while read -r line; do n=$((n+1)); echo "got:$n:$line"; done; : ${marker}`],
      shell: true,
      env: {},
      timeoutSeconds: 120,
    });
    await adapter.writeStdin(ref, started.pid, Buffer.from('a\n'));
    expect((await attachUntil(adapter, ref, started.pid, (text) => text.includes('got:1:a')).done).text).toBe(
      'got:1:a\n',
    );
    const states = async () => {
      const found: string[] = [];
      for (const pid of (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry))) {
        const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (!commandLine.includes(marker) || commandLine.includes('vitest')) continue;
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        found.push(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '?');
      }
      return found;
    };
    await expect.poll(async () => (await states()).length).toBeGreaterThanOrEqual(2);
    await adapter.pause(ref);
    try {
      expect((await adapter.get(ref)).state).toBe('paused');
      expect(new Set(await states())).toEqual(new Set(['T']));
      // Nothing new starts in a paused sandbox; input waits for it.
      await expect(adapter.exec(ref, { command: 'true' })).rejects.toMatchObject({ code: 'invalid_state' });
      await adapter.writeStdin(ref, started.pid, Buffer.from('b\n'));
    } finally {
      await adapter.resume(ref);
    }
    expect((await adapter.get(ref)).state).toBe('running');
    await expect.poll(async () => (await states()).includes('T')).toBe(false);
    // The counter went on from where it was: the shell's memory was kept.
    expect((await attachUntil(adapter, ref, started.pid, (text) => text.includes('got:2:b')).done).text).toBe(
      'got:2:b\n',
    );
    await adapter.signalProcess(ref, started.pid, 'SIGKILL');
    await adapter.stop(ref);
    await adapter.start(ref);
  });

  it('ends its processes with the sandbox', async () => {
    const started = await adapter.startProcess(ref, {
      argv: ['sleep', '300'],
      shell: false,
      env: {},
      timeoutSeconds: 600,
    });
    const waiting = adapter.attachProcess(ref, started.pid, () => undefined);
    await adapter.stop(ref);
    expect(await waiting).toBe(137);
    await adapter.start(ref);
    await expect(adapter.writeStdin(ref, started.pid, Buffer.from('x'))).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('leaves nothing running when a kill lands while the jail is still being made', async () => {
    // bwrap's pid 1 of the jail has a session of its own: a kill of the launcher's group alone, landing
    // before that pid asked to die with its parent, left the jail and its command running (CI, 2026-12-07).
    const marker = `marker-${newId('sandbox')}`;
    for (let round = 0; round < 25; round += 1) {
      const started = await adapter.startProcess(ref, {
        argv: [`sleep 300; : ${marker}`],
        shell: true,
        env: {},
        timeoutSeconds: 600,
      });
      const waiting = adapter.attachProcess(ref, started.pid, () => undefined);
      const abort = new AbortController();
      const exec = adapter.execStream(ref, { command: `sleep 300; : ${marker}` }, () => undefined, {
        signal: abort.signal,
      });
      // From "before the command was even spawned" to "while bwrap sets the jail up".
      if (round % 5 !== 0) await new Promise((resolve) => setTimeout(resolve, round % 7));
      abort.abort();
      await adapter.stop(ref);
      expect(await waiting).toBe(137);
      expect(await exec).toBe(137);
      await adapter.start(ref);
    }
    const left = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
    const survivors: string[] = [];
    for (const pid of left) {
      const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (commandLine.includes(marker) && !commandLine.includes('vitest')) survivors.push(pid);
    }
    expect(survivors).toEqual([]);
  });
});
