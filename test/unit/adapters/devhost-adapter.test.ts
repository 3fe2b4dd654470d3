import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devhostConfigSchema } from '../../../adapters/devhost/config.ts';
import { DevhostAdapter } from '../../../adapters/devhost/devhost-adapter.ts';
import { bubblewrapAvailable } from '../../../adapters/devhost/jail.ts';

/** CI installs bubblewrap (.ci/run): there, the jail's tests must run, never be skipped. */
const jailed = bubblewrapAvailable();
if (!jailed && process.env.CI !== undefined) throw new Error('bubblewrap is missing: .ci/run installs it');

import type { ExecEvent } from '../../../lib/adapter/port.ts';
import { newId } from '../../../lib/ids.ts';

describe('DevhostAdapter', () => {
  let root: string;
  let adapter: DevhostAdapter;
  let ref: string;
  const installation = 'inst_devhost_test';

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'devhost-test-'));
    adapter = new DevhostAdapter(devhostConfigSchema.parse({ root, outputMaxBytes: 1024 }));
    const instance = await adapter.create({
      id: newId('sandbox'),
      installation,
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: { GREETING: 'hello' },
      labels: {},
    });
    ref = instance.ref;
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('returns non-zero exit codes as results', async () => {
    expect(await adapter.exec(ref, { command: 'exit 3' })).toMatchObject({ exitCode: 3, timedOut: false });
    expect(await adapter.exec(ref, { command: 'echo hi' })).toMatchObject({
      exitCode: 0,
      stdout: 'hi\n',
      stderr: '',
    });
  });

  it('runs args directly, without a shell', async () => {
    const result = await adapter.exec(ref, { args: ['printf', '%s|', 'a b', '$HOME'] });
    expect(result.stdout).toBe('a b|$HOME|');
  });

  it('honours cwd inside the sandbox, creating it', async () => {
    const result = await adapter.exec(ref, { command: 'pwd', cwd: '/work/sub' });
    expect(result.stdout.trim()).toBe(jailed ? '/work/sub' : join(root, ref, 'fs', 'work', 'sub'));
  });

  it('uses the sandbox env as the base and the request env on top, never the host env', async () => {
    process.env.DIFFERENTLY_TEST_SECRET = 'do-not-leak';
    const result = await adapter.exec(ref, {
      command: 'echo "$GREETING $NAME [$DIFFERENTLY_TEST_SECRET]"',
      env: { NAME: 'world' },
    });
    expect(result.stdout).toBe('hello world []\n');
    delete process.env.DIFFERENTLY_TEST_SECRET;
  });

  it('feeds stdin', async () => {
    expect((await adapter.exec(ref, { command: 'tr a-z A-Z', stdin: 'shout' })).stdout).toBe('SHOUT');
  });

  it('kills the whole process group at the timeout and reports exit 124', async () => {
    const result = await adapter.exec(ref, { command: 'sleep 30 & sleep 30; echo never', timeoutSeconds: 1 });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.stdout).toBe('');
    expect(result.durationMs).toBeLessThan(10_000);
  });

  it('caps buffered output and says it was truncated', async () => {
    const result = await adapter.exec(ref, { command: 'head -c 100000 /dev/zero | tr "\\0" x' });
    expect(result.truncated).toBe(true);
    expect(result.stdout.length).toBe(1024);
  });

  it('streams stdout and stderr as produced', async () => {
    const events: ExecEvent[] = [];
    const exitCode = await adapter.execStream(ref, { command: 'echo out; echo err >&2; exit 5' }, (e) => {
      events.push(e);
    });
    expect(exitCode).toBe(5);
    expect(
      events
        .filter((e) => e.stream === 'stdout')
        .map((e) => e.data)
        .join(''),
    ).toBe('out\n');
    expect(
      events
        .filter((e) => e.stream === 'stderr')
        .map((e) => e.data)
        .join(''),
    ).toBe('err\n');
  });

  it('writes, reads and lists files, creating parents', async () => {
    await adapter.writeFile(ref, '/data/deep/file.txt', new TextEncoder().encode('content'));
    expect(new TextDecoder().decode(await adapter.readFile(ref, '/data/deep/file.txt'))).toBe('content');
    expect((await adapter.listFiles(ref, '/data')).map((f) => [f.name, f.isDir])).toEqual([['deep', true]]);
  });

  it('says in plain words what is wrong with a path: missing, a directory, a file in the middle', async () => {
    await adapter.writeFile(ref, '/words/file.txt', new TextEncoder().encode('x'));
    await expect(adapter.readFile(ref, '/words/nope.txt')).rejects.toMatchObject({
      code: 'not_found',
      message: 'no file or directory at /words/nope.txt in the sandbox',
    });
    await expect(adapter.readFile(ref, '/words')).rejects.toMatchObject({
      code: 'invalid_request',
      message: '/words is a directory: read a file, or list the directory',
    });
    await expect(adapter.listFiles(ref, '/words/file.txt/inner')).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'a part of /words/file.txt/inner is a file, not a directory',
    });
    await expect(
      adapter.writeFile(ref, '/words/file.txt/inner.txt', new TextEncoder().encode('y')),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('is a file, not a directory'),
    });
  });

  it('refuses paths that escape the sandbox or are relative', async () => {
    await expect(adapter.readFile(ref, '/../../etc/passwd')).rejects.toMatchObject({ code: 'not_found' });
    await expect(adapter.readFile(ref, 'etc/passwd')).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(adapter.readFile(ref, '/a\0b')).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('is idempotent on create, lists by installation, deletes idempotently', async () => {
    const id = newId('sandbox');
    const request = {
      id,
      installation,
      resources: { cpu: 1, memoryMiB: 512, diskGiB: 1 },
      env: {},
      labels: {},
    };
    const first = await adapter.create(request);
    expect((await adapter.create(request)).ref).toBe(first.ref);
    expect((await adapter.list(installation)).map((i) => i.sandboxId).sort()).toEqual([ref, id].sort());
    expect(await adapter.list('inst_other')).toEqual([]);
    await adapter.delete(first.ref);
    await adapter.delete(first.ref);
    await expect(adapter.get(first.ref)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('refuses exec on a stopped sandbox and runs again after start', async () => {
    await adapter.stop(ref);
    await expect(adapter.exec(ref, { command: 'true' })).rejects.toMatchObject({ code: 'invalid_state' });
    await adapter.start(ref);
    expect((await adapter.exec(ref, { command: 'true' })).exitCode).toBe(0);
  });

  describe.runIf(jailed)('in its bubblewrap jail', () => {
    it('sees the files the files API wrote at the same paths, and the files API sees what it wrote', async () => {
      await adapter.writeFile(ref, '/work/hello.txt', new TextEncoder().encode('from the API'));
      expect((await adapter.exec(ref, { command: 'cat /work/hello.txt' })).stdout).toBe('from the API');
      await adapter.exec(ref, { command: 'echo from the command > /work/made.txt' });
      expect(new TextDecoder().decode(await adapter.readFile(ref, '/work/made.txt'))).toBe(
        'from the command\n',
      );
      // The host's own folders are not the sandbox's: nothing it writes lands there.
      expect(
        (await adapter.exec(ref, { command: 'touch /usr/x 2>/dev/null; echo $?' })).stdout.trim(),
      ).not.toBe('0');
    });

    it("sees neither the control plane's processes nor their environment", async () => {
      process.env.DEVHOST_SECRET_PROBE = 'not-for-tenants';
      try {
        const seen = await adapter.exec(ref, {
          command: `ls /proc | grep -c '^[0-9]'; test -e /proc/${process.pid} && echo visible; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c DEVHOST_SECRET_PROBE; env | grep -c DEVHOST_SECRET_PROBE`,
        });
        const [processes, ...rest] = seen.stdout.trim().split('\n');
        expect(Number(processes)).toBeLessThan(10);
        expect(rest).toEqual(['0', '0']);
      } finally {
        delete process.env.DEVHOST_SECRET_PROBE;
      }
    });

    it('refuses, in the files API, a symbolic link a command made that leads out of the sandbox', async () => {
      await adapter.exec(ref, {
        command: `ln -sf ${join(root, '..')} /work/out; ln -sf /etc/passwd /work/passwd`,
      });
      await expect(adapter.readFile(ref, '/work/passwd')).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(adapter.listFiles(ref, '/work/out')).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(adapter.writeFile(ref, '/work/out/x.txt', new Uint8Array([1]))).rejects.toMatchObject({
        code: 'invalid_request',
      });
    });

    it('says so in its trust report, with what it measured', () => {
      expect(adapter.info().isolation).toMatch(/^namespaces: bubblewrap/);
      expect(adapter.info().isolation).toMatch(/measured at start: .*no capabilities yes/);
      expect(adapter.info().isolationVerified).toBe(true);
    });

    it('never follows a link in the files API, wherever it is in the path, even one inside the sandbox', async () => {
      await adapter.exec(ref, {
        command: 'mkdir -p /work/real/sub && echo deep > /work/real/sub/f && ln -sfn /work/real /work/alias',
      });
      for (const path of ['/work/alias/sub/f', '/work/alias/sub/new']) {
        await expect(adapter.readFile(ref, path)).rejects.toMatchObject({
          code: 'invalid_request',
          message: expect.stringContaining('passes through a symbolic link (alias)'),
        });
      }
      await expect(adapter.writeFile(ref, '/work/alias/sub/new', new Uint8Array([1]))).rejects.toMatchObject({
        code: 'invalid_request',
      });
      await expect(adapter.listFiles(ref, '/work/alias/sub')).rejects.toMatchObject({
        code: 'invalid_request',
      });
      // The link itself is listed as it is, never followed (its size is the link's, not a file's).
      const listed = await adapter.listFiles(ref, '/work');
      expect(listed.find((entry) => entry.name === 'alias')).toMatchObject({
        isDir: false,
        size: '/work/real'.length,
      });
      expect(new TextDecoder().decode(await adapter.readFile(ref, '/work/real/sub/f'))).toBe('deep\n');
    });

    it("refuses a file over the caller's limit before reading it, and a FIFO without waiting on it", async () => {
      await adapter.exec(ref, { command: 'truncate -s 64M /work/sparse && mkfifo /work/pipe' });
      await expect(adapter.readFile(ref, '/work/sparse', { maxBytes: 1024 })).rejects.toMatchObject({
        code: 'payload_too_large',
      });
      await expect(adapter.readFile(ref, '/work/pipe')).rejects.toMatchObject({
        code: 'invalid_request',
        message: '/work/pipe is not a regular file',
      });
      await expect(adapter.writeFile(ref, '/work/pipe', new Uint8Array([1]))).rejects.toMatchObject({
        code: 'invalid_request',
      });
    });

    it("gives what the files API writes to the jail's user, so commands can change it", async () => {
      await adapter.writeFile(ref, '/work/made/by/api.txt', new TextEncoder().encode('api'));
      const result = await adapter.exec(ref, {
        command:
          'echo more >> /work/made/by/api.txt && touch /work/made/by/second && stat -c %u /work/made/by/api.txt',
      });
      expect(result).toMatchObject({ exitCode: 0, stdout: '1000\n' });
    });

    it('keeps the tenant environment out of the launcher: bwrap runs with a fixed one', async () => {
      const result = await adapter.exec(ref, {
        args: ['env'],
        env: { LD_PRELOAD: '/nonexistent.so', MARKER: 'inside' },
      });
      // The loader of the one command (inside) complains; bwrap itself never saw the variable.
      expect(result.stdout).toContain('MARKER=inside');
      expect(result.stderr.split('\n').filter((line) => line.includes('nonexistent.so'))).toHaveLength(1);
    });
  });

  it('says in its limitations when it runs commands unjailed', () => {
    const bare = new DevhostAdapter(devhostConfigSchema.parse({ root, isolation: 'none' }));
    expect(bare.info().isolation).toMatch(/^none/);
    expect((bare.info().limitations ?? []).join('\n')).toContain("see the host's files and processes");
  });
});
