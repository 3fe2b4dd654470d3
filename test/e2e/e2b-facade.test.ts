import { e2b as computeE2b } from '@computesdk/e2b';
import { E2BSandbox as MastraE2bSandbox } from '@mastra/e2b';
import { CommandExitError, Sandbox } from 'e2b';
import { Sandbox as SandboxV245 } from 'e2b-2.45';
import { Sandbox as SandboxV250 } from 'e2b-2.50';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FakeAdapter } from '../../adapters/fake/fake-adapter.ts';
import { startLocalRuntime } from '../../infra/local/runtime.ts';
import { parseConfig } from '../../lib/config.ts';
import { orgKey, pointE2bAt } from '../helpers/e2b-keys.ts';
import { type E2e, startE2e } from '../helpers/e2e.ts';

/**
 * The E2B SDK itself (the `e2b` package, pinned: 2.51.0 with the /v2 paths, and 2.50.0 before them) and
 * @computesdk/e2b, configured only by E2B_API_URL and E2B_SANDBOX_URL pointing at `<runtime>/e2b`, against
 * the local runtime (two containers per function) with a devhost pool.
 */
describe('the E2B-compatible API, driven by the E2B SDK', () => {
  let e: E2e;
  let apiKey: string;
  let otherKey: string;

  beforeAll(async () => {
    e = await startE2e();
    pointE2bAt(e.runtime.url);
    apiKey = (await orgKey(e.runtime, 'e2b-users')).e2bApiKey;
    otherKey = (await orgKey(e.runtime, 'e2b-others')).e2bApiKey;
  }, 60_000);

  afterAll(async () => {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await e?.stop();
  });

  it('creates a running sandbox and runs commands in it: output, exit codes, streamed output, envs and cwd', async () => {
    const sandbox = await Sandbox.create({
      apiKey,
      envs: { GREETING: 'hello' },
      metadata: { team: 'agents' },
    });
    try {
      const differently = await e.get(sandbox.sandboxId, e.key).catch(() => undefined);
      // Another org's key cannot see it through REST either: the facade acts as the E2B key's org.
      expect(differently).toBeUndefined();
      const result = await sandbox.commands.run('echo $GREETING; echo oops >&2');
      expect(result).toMatchObject({ exitCode: 0, stdout: 'hello\n', stderr: 'oops\n' });
      // Run in E2B's login shell as written: no positional parameters, the shell as $0.
      expect((await sandbox.commands.run('echo "$# $0"')).stdout).toBe('0 /bin/bash\n');
      await expect(sandbox.commands.run('exit 3')).rejects.toBeInstanceOf(CommandExitError);
      await expect(sandbox.commands.run('exit 3')).rejects.toMatchObject({ exitCode: 3 });
      const seen: string[] = [];
      const streamed = await sandbox.commands.run('for i in 1 2 3; do echo line $i; done', {
        onStdout: (data) => {
          seen.push(data);
        },
      });
      expect(streamed.stdout).toBe('line 1\nline 2\nline 3\n');
      expect(seen.join('')).toBe('line 1\nline 2\nline 3\n');
      const where = await sandbox.commands.run('pwd; echo $MINE', { cwd: '/work', envs: { MINE: 'mine' } });
      expect(where.stdout).toBe('/work\nmine\n');
      // Without a cwd, commands run in E2B's home.
      expect((await sandbox.commands.run('pwd')).stdout).toBe('/home/user\n');
    } finally {
      await sandbox.kill();
    }
  });

  it('writes, reads and lists files (text, bytes, relative paths, several at once) and manages folders', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    try {
      const info = await sandbox.files.write('/home/user/a/hello.txt', 'hello world');
      expect(info).toMatchObject({ name: 'hello.txt', path: '/home/user/a/hello.txt' });
      expect(await sandbox.files.read('/home/user/a/hello.txt')).toBe('hello world');
      const bytes = new Uint8Array([0, 1, 2, 250, 255]);
      await sandbox.files.write('a/bytes.bin', bytes.buffer);
      expect(await sandbox.files.read('/home/user/a/bytes.bin', { format: 'bytes' })).toEqual(bytes);
      await sandbox.files.write([
        { path: '/home/user/many/one.txt', data: 'one' },
        { path: '/home/user/many/two.txt', data: 'two' },
      ]);
      expect((await sandbox.commands.run('cat /home/user/many/one.txt /home/user/many/two.txt')).stdout).toBe(
        'onetwo',
      );
      const listed = await sandbox.files.list('/home/user/a');
      expect(listed.map((entry) => [entry.name, entry.type, entry.size]).sort()).toEqual([
        ['bytes.bin', 'file', 5],
        ['hello.txt', 'file', 11],
      ]);
      expect(await sandbox.files.exists('/home/user/a/hello.txt')).toBe(true);
      expect(await sandbox.files.exists('/home/user/a/missing.txt')).toBe(false);
      expect(await sandbox.files.makeDir('/home/user/made')).toBe(true);
      expect(await sandbox.files.makeDir('/home/user/made')).toBe(false);
      const moved = await sandbox.files.rename('/home/user/a/hello.txt', '/home/user/made/moved.txt');
      expect(moved).toMatchObject({ name: 'moved.txt', path: '/home/user/made/moved.txt' });
      await sandbox.files.remove('/home/user/made/moved.txt');
      expect(await sandbox.files.exists('/home/user/made/moved.txt')).toBe(false);
      await expect(sandbox.files.read('/home/user/nothing-here')).rejects.toThrow(/not found|no file/i);
    } finally {
      await sandbox.kill();
    }
  });

  it('reports, lists, extends and kills sandboxes as E2B does (kill of a gone sandbox is false)', async () => {
    const sandbox = await Sandbox.create({ apiKey, metadata: { purpose: 'listing' }, timeoutMs: 120_000 });
    const info = await sandbox.getInfo();
    expect(info).toMatchObject({
      sandboxId: sandbox.sandboxId,
      state: 'running',
      metadata: { purpose: 'listing' },
    });
    await sandbox.setTimeout(600_000);
    const extended = await sandbox.getInfo();
    expect(extended.endAt.getTime() - Date.now()).toBeGreaterThan(500_000);
    expect(await sandbox.isRunning()).toBe(true);
    const page = await Sandbox.list({ apiKey, query: { metadata: { purpose: 'listing' } } }).nextItems();
    expect(page.map((item) => item.sandboxId)).toEqual([sandbox.sandboxId]);
    // Another org sees none of it.
    expect(await Sandbox.list({ apiKey: otherKey }).nextItems()).toEqual([]);
    await expect(Sandbox.getInfo(sandbox.sandboxId, { apiKey: otherKey })).rejects.toThrow(/not found/i);
    expect(await Sandbox.kill(sandbox.sandboxId, { apiKey: otherKey })).toBe(false);
    expect(await sandbox.kill()).toBe(true);
    expect(await sandbox.kill()).toBe(false);
    await expect(sandbox.getInfo()).rejects.toThrow(/not found/i);
  });

  it("refuses envd calls without the sandbox's access token or with another sandbox's", async () => {
    const one = await Sandbox.create({ apiKey });
    const two = await Sandbox.create({ apiKey });
    try {
      const call = (sandboxId: string, token: string | undefined) =>
        fetch(`${e.runtime.url}/e2b/filesystem.Filesystem/ListDir`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'e2b-sandbox-id': sandboxId,
            ...(token !== undefined && { 'x-access-token': token }),
          },
          body: JSON.stringify({ path: '/' }),
        });
      const tokenOfOne = z.object({ envdAccessToken: z.string() }).parse(
        await (
          await fetch(`${e.runtime.url}/e2b/sandboxes/${one.sandboxId}`, {
            headers: { 'x-api-key': apiKey },
          })
        ).json(),
      ).envdAccessToken;
      expect((await call(one.sandboxId, tokenOfOne)).status).toBe(200);
      expect(tokenOfOne).not.toContain(apiKey);
      for (const refused of [
        await call(one.sandboxId, undefined),
        await call(two.sandboxId, tokenOfOne),
        await call(one.sandboxId, apiKey),
      ]) {
        expect(refused.status).toBe(401);
        expect(await refused.json()).toMatchObject({ code: 'unauthenticated' });
      }
    } finally {
      await one.kill();
      await two.kill();
    }
  });

  it("acts as E2B's default user, and as root where the pool offers it; keeps a timeout as given or refuses it, never raising it", async () => {
    await expect(Sandbox.create({ apiKey, timeoutMs: 30_000 })).rejects.toThrow(
      /timeout of 30 s is shorter than the shortest sandbox lifetime Differently keeps, 60 s/,
    );
    const sandbox = await Sandbox.create({ apiKey, timeoutMs: 90_000 });
    try {
      const kept = z.object({ ttlSeconds: z.number() }).parse(
        await (
          await fetch(`${e.runtime.url}/v1/sandboxes/${sandbox.sandboxId}`, {
            headers: { authorization: `Bearer ${apiKey}` },
          })
        ).json(),
      );
      expect(kept.ttlSeconds).toBe(90);
      await expect(sandbox.setTimeout(10_000)).rejects.toThrow(/10 s is shorter/);
      // Named or not, `user` is the sandbox's unprivileged user (uid 1000 in the devhost jail).
      expect((await sandbox.commands.run('id -u', { user: 'user' })).stdout).toBe('1000\n');
      expect((await sandbox.commands.run('id -u')).stdout).toBe('1000\n');
      await sandbox.files.write('/home/user/owned.txt', 'mine', { user: 'user' });
      expect(await sandbox.files.read('/home/user/owned.txt', { user: 'user' })).toBe('mine');
      // root: uid 0 inside the devhost jail (exec.root), on commands, interactive ones, RPCs and files.
      expect((await sandbox.commands.run('id -u', { user: 'root' })).stdout).toBe('0\n');
      const rootShell = await sandbox.commands.run('cat >/dev/null; id -u', {
        background: true,
        stdin: true,
        user: 'root',
      });
      await sandbox.commands.closeStdin(rootShell.pid);
      expect((await rootShell.wait()).stdout).toBe('0\n');
      expect((await sandbox.files.list('/home/user', { user: 'root' })).map((entry) => entry.name)).toContain(
        'owned.txt',
      );
      await sandbox.files.write('/home/user/root.txt', 'x', { user: 'root' });
      expect(await sandbox.files.read('/home/user/root.txt', { user: 'root' })).toBe('x');
      // Another name is none of E2B's users.
      await expect(sandbox.commands.run('id -u', { user: 'admin' as 'root' })).rejects.toThrow(
        /no user admin/,
      );
    } finally {
      await sandbox.kill();
    }
  });

  it('watches a folder (create, write, remove, rename; recursive or not) and measures the sandbox', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    try {
      await sandbox.files.makeDir('/home/user/watched/nested');
      await sandbox.files.write('/home/user/watched/old.txt', 'x');
      const seen: { name: string; type: string }[] = [];
      const handle = await sandbox.files.watchDir('/home/user/watched', (event) => {
        seen.push({ name: event.name, type: event.type });
      });
      await sandbox.files.write('/home/user/watched/new.txt', 'hello');
      await sandbox.files.write('/home/user/watched/nested/deep.txt', 'not watched: not recursive');
      await sandbox.commands.run('echo more >> /home/user/watched/old.txt');
      await sandbox.files.rename('/home/user/watched/old.txt', '/home/user/watched/renamed.txt');
      await sandbox.files.write('/home/user/watched/gone.txt', 'x');
      await expect
        .poll(() => seen, { timeout: 15_000 })
        .toEqual(expect.arrayContaining([{ name: 'gone.txt', type: 'create' }]));
      await sandbox.files.remove('/home/user/watched/gone.txt');
      await expect
        .poll(() => seen, { timeout: 15_000 })
        .toEqual(
          expect.arrayContaining([
            { name: 'new.txt', type: 'create' },
            { name: 'old.txt', type: 'rename' },
            { name: 'renamed.txt', type: 'create' },
            { name: 'gone.txt', type: 'remove' },
          ]),
        );
      expect(seen.some((event) => event.name.includes('deep.txt'))).toBe(false);
      await handle.stop();
      const recursive: { name: string; type: string }[] = [];
      const deep = await sandbox.files.watchDir(
        'watched',
        (event) => {
          recursive.push({ name: event.name, type: event.type });
        },
        { recursive: true },
      );
      await sandbox.commands.run('echo changed >> /home/user/watched/nested/deep.txt');
      await expect
        .poll(() => recursive, { timeout: 15_000 })
        .toEqual(expect.arrayContaining([{ name: 'nested/deep.txt', type: 'write' }]));
      await deep.stop();
      await expect(sandbox.files.watchDir('/home/user/no-such-folder', () => undefined)).rejects.toThrow(
        /not a directory/,
      );
      const [metric, ...more] = await sandbox.getMetrics();
      expect(more).toEqual([]);
      expect(metric).toMatchObject({
        cpuCount: expect.any(Number),
        cpuUsedPct: expect.any(Number),
        memUsed: expect.any(Number),
        memTotal: expect.any(Number),
        diskUsed: expect.any(Number),
        diskTotal: expect.any(Number),
      });
      expect(metric?.cpuCount).toBeGreaterThanOrEqual(1);
      expect(metric?.memTotal).toBeGreaterThan(metric?.memUsed ?? 0);
      expect(metric?.diskTotal).toBeGreaterThan(0);
      expect(Math.abs((metric?.timestamp.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);
    } finally {
      await sandbox.kill();
    }
  });

  it('refuses what it does not offer, naming it: create options, an unknown template, a process that never ran', async () => {
    await expect(
      Sandbox.create({ apiKey, lifecycle: { onTimeout: 'pause', autoResume: false } }),
    ).rejects.toThrow(/autoResume/);
    // Denying all traffic is an egress policy now (docs/network.md); a tenant's deny-list is not.
    await expect(Sandbox.create({ apiKey, network: { denyOut: ['10.0.0.0/8'] } })).rejects.toThrow(
      /network\.denyOut of some ranges only/,
    );
    await expect(Sandbox.create('no-such-template', { apiKey })).rejects.toThrow(/template no-such-template/);
    const sandbox = await Sandbox.create({ apiKey });
    try {
      // Interactive calls are served (the devhost pool has exec.stdin and exec.pty); a pid that never ran
      // is not_found, never a hang.
      await expect(sandbox.commands.sendStdin(1234, 'x')).rejects.toThrow(/1234/);
      // A streamed call not served answers Connect's streaming shape (200, the error in the end-stream
      // envelope) naming it: an HTTP 400 would read as "internal" in the SDK.
      const unserved = await fetch(`${e.runtime.url}/e2b/filesystem.Filesystem/WatchEverything`, {
        method: 'POST',
        headers: {
          'content-type': 'application/connect+json',
          'e2b-sandbox-id': sandbox.sandboxId,
          'x-access-token': (sandbox as unknown as { envdAccessToken: string }).envdAccessToken,
        },
        body: Buffer.concat([Buffer.from([0, 0, 0, 0, 2]), Buffer.from('{}')]),
      });
      expect(unserved.status).toBe(200);
      const end = Buffer.from(await unserved.arrayBuffer());
      expect(end[0]).toBe(2);
      expect(JSON.parse(end.subarray(5).toString())).toMatchObject({
        error: { code: 'unimplemented', message: expect.stringContaining('WatchEverything') },
      });
    } finally {
      await sandbox.kill();
    }
  });

  /** What the test calls of an SDK version's Sandbox class (the three pinned versions share it). */
  type InteractiveSdk = {
    create(opts: { apiKey: string }): Promise<Sandbox>;
    connect(id: string, opts: { apiKey: string }): Promise<Sandbox>;
  };
  const interactiveSdks: [string, InteractiveSdk][] = [
    ['2.51', Sandbox],
    ['2.50', SandboxV250 as unknown as InteractiveSdk],
    ['2.45', SandboxV245 as unknown as InteractiveSdk],
  ];

  it.each(interactiveSdks)(
    'SDK %s: watchDir, getMetrics, the default user and root, a timeout under 60 s refused',
    async (_version, Sdk) => {
      await expect(
        (Sdk as unknown as { create(opts: object): Promise<Sandbox> }).create({ apiKey, timeoutMs: 10_000 }),
      ).rejects.toThrow(/shorter than the shortest sandbox lifetime/);
      const sandbox = await Sdk.create({ apiKey });
      try {
        const seen: string[] = [];
        const handle = await sandbox.files.watchDir('/home/user', (event) => {
          seen.push(`${event.type}:${event.name}`);
        });
        await sandbox.files.write('/home/user/seen.txt', 'x');
        await expect.poll(() => seen, { timeout: 15_000 }).toContain('create:seen.txt');
        await handle.stop();
        const metrics = await sandbox.getMetrics();
        expect(metrics).toHaveLength(1);
        expect(metrics[0]?.memTotal).toBeGreaterThan(0);
        expect((await sandbox.commands.run('id -u', { user: 'user' })).stdout).toBe('1000\n');
        expect((await sandbox.commands.run('id -u', { user: 'root' })).stdout).toBe('0\n');
      } finally {
        await sandbox.kill();
      }
    },
  );

  it.each(interactiveSdks)(
    'SDK %s: stdin after start, closeStdin, connect from a new client, a terminal with resize',
    async (_version, Sdk) => {
      const sandbox = await Sdk.create({ apiKey });
      try {
        // A REPL fed line by line (Mastra's executeCommand opens every command with stdin: true).
        const handle = await sandbox.commands.run('while read -r line; do echo "got:$line"; done; echo bye', {
          background: true,
          stdin: true,
        });
        await sandbox.commands.sendStdin(handle.pid, 'one\n');
        await expect.poll(() => handle.stdout, { timeout: 15_000 }).toContain('got:one');
        // Another client (a new connection, any container) attaches to the running process and feeds it.
        const again = await Sdk.connect(sandbox.sandboxId, { apiKey });
        const attached = await again.commands.connect(handle.pid);
        expect((await again.commands.list()).map((process) => process.pid)).toContain(handle.pid);
        await again.commands.sendStdin(handle.pid, 'two\n');
        await again.commands.closeStdin(handle.pid);
        const result = await attached.wait();
        expect(result.exitCode).toBe(0);
        expect(result.stdout).toContain('got:two\nbye\n');
        expect((await handle.wait()).stdout).toBe('got:one\ngot:two\nbye\n');
        // Without stdin: true, a command that reads its input sees the end at once.
        expect((await sandbox.commands.run('cat; echo done')).stdout).toBe('done\n');

        // A terminal: the shell sees a tty of the asked size, then the new one.
        const decoder = new TextDecoder();
        let screen = '';
        const terminal = await sandbox.pty.create({
          cols: 91,
          rows: 27,
          onData: (data) => {
            screen += decoder.decode(data, { stream: true });
          },
        });
        await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('stty size; tty\n'));
        // Both lines: the size, then the terminal's name (they may arrive in separate chunks).
        await expect.poll(() => screen, { timeout: 15_000 }).toMatch(/27 91\s+\/dev\/pts\/\d+/);
        await sandbox.pty.resize(terminal.pid, { cols: 120, rows: 40 });
        await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('stty size; exit 5\n'));
        await expect.poll(() => screen, { timeout: 15_000 }).toMatch(/40 120/);
        const ended = await terminal.wait().catch((error: unknown) => error);
        expect(ended).toMatchObject({ exitCode: 5 });
        // An ended process is gone for kill (false) and refuses input with a clear error.
        expect(await sandbox.commands.kill(terminal.pid)).toBe(false);
        await expect(sandbox.pty.sendInput(terminal.pid, new Uint8Array([65]))).rejects.toThrow(/exited/);
      } finally {
        await sandbox.kill();
      }
    },
    90_000,
  );

  it('takes input through StreamInput, the client stream the SDK defines (delivered in order, clear errors)', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    try {
      const token = z.object({ envdAccessToken: z.string() }).parse(
        await (
          await fetch(`${e.runtime.url}/e2b/sandboxes/${sandbox.sandboxId}`, {
            headers: { 'x-api-key': apiKey },
          })
        ).json(),
      ).envdAccessToken;
      // Connect's envelope, written here from the protocol: flag byte, 4-byte big-endian length, JSON.
      const frame = (message: unknown, flags = 0) => {
        const json = Buffer.from(JSON.stringify(message));
        const head = Buffer.alloc(5);
        head.writeUInt8(flags, 0);
        head.writeUInt32BE(json.length, 1);
        return Buffer.concat([head, json]);
      };
      const messagesOf = (bytes: Buffer) => {
        const out: { flags: number; message: unknown }[] = [];
        for (let at = 0; at < bytes.length; ) {
          const length = bytes.readUInt32BE(at + 1);
          out.push({
            flags: bytes.readUInt8(at),
            message: JSON.parse(bytes.subarray(at + 5, at + 5 + length).toString()),
          });
          at += 5 + length;
        }
        return out;
      };
      const streamInput = async (messages: unknown[]) => {
        const response = await fetch(`${e.runtime.url}/e2b/process.Process/StreamInput`, {
          method: 'POST',
          headers: {
            'content-type': 'application/connect+json',
            'connect-protocol-version': '1',
            'e2b-sandbox-id': sandbox.sandboxId,
            'x-access-token': token,
          },
          body: Buffer.concat(messages.map((message) => frame(message))),
        });
        expect(response.status).toBe(200);
        return messagesOf(Buffer.from(await response.arrayBuffer()));
      };
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      const handle = await sandbox.commands.run('cat', { background: true, stdin: true });
      expect(
        await streamInput([
          { start: { process: { pid: handle.pid } } },
          { data: { input: { stdin: b64('one\n') } } },
          { keepalive: {} },
          { data: { input: { stdin: b64('two\n') } } },
        ]),
      ).toEqual([
        { flags: 0, message: {} },
        { flags: 2, message: {} },
      ]);
      await expect.poll(() => handle.stdout, { timeout: 15_000 }).toBe('one\ntwo\n');
      // Input before a start, or to a process that does not exist, ends the stream with the reason.
      const [noStart] = await streamInput([{ data: { input: { stdin: b64('x') } } }]);
      expect(noStart).toMatchObject({ flags: 2, message: { error: { code: 'invalid_argument' } } });
      const [missing] = await streamInput([
        { start: { process: { pid: 999_999 } } },
        { data: { input: { stdin: b64('x') } } },
      ]);
      expect(missing).toMatchObject({ flags: 2, message: { error: { code: 'not_found' } } });
      expect(handle.stdout).toBe('one\ntwo\n');
      await sandbox.commands.closeStdin(handle.pid);
      expect((await handle.wait()).stdout).toBe('one\ntwo\n');
    } finally {
      await sandbox.kill();
    }
  }, 60_000);

  it('lists a background command and kills it (its whole process group), from any container; a gone pid is false', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    try {
      const handle = await sandbox.commands.run('sh -c "sleep 300; echo never"', { background: true });
      await expect
        .poll(async () => (await sandbox.commands.list()).map((process) => process.pid), { timeout: 15_000 })
        .toContain(handle.pid);
      const listed = (await sandbox.commands.list()).find((process) => process.pid === handle.pid);
      expect(listed).toMatchObject({
        cmd: '/bin/bash',
        args: ['-l', '-c', 'sh -c "sleep 300; echo never"'],
        cwd: '/home/user',
      });
      // Run without stdin, it is a streamed exec (the fast path): its one caller has its output.
      await expect(sandbox.commands.connect(handle.pid)).rejects.toThrow(/started without stdin/);
      expect(await sandbox.commands.kill(handle.pid)).toBe(true);
      const ended = await handle.wait().catch((error: unknown) => error);
      expect(ended).toMatchObject({ exitCode: 137 });
      expect((ended as { stdout: string }).stdout).not.toContain('never');
      await expect
        .poll(async () => (await sandbox.commands.list()).map((process) => process.pid))
        .not.toContain(handle.pid);
      expect(await sandbox.commands.kill(handle.pid)).toBe(false);
      // A deadline still ends the command and everything it started: nothing is left listed.
      await expect(sandbox.commands.run('sh -c "sleep 300"', { timeoutMs: 2000 })).rejects.toThrow();
      await expect.poll(async () => (await sandbox.commands.list()).length, { timeout: 15_000 }).toBe(0);
      expect((await sandbox.commands.run('echo done')).stdout).toBe('done\n');
    } finally {
      await sandbox.kill();
    }
  }, 60_000);

  it('serves SDK 2.50 (create and connect without /v2) the same way', async () => {
    const sandbox = await SandboxV250.create({ apiKey });
    try {
      expect((await sandbox.commands.run('echo old sdk')).stdout).toBe('old sdk\n');
      await sandbox.files.write('/home/user/old.txt', 'from 2.50');
      expect(await sandbox.files.read('/home/user/old.txt')).toBe('from 2.50');
      const again = await SandboxV250.connect(sandbox.sandboxId, { apiKey });
      expect((await again.commands.run('cat /home/user/old.txt')).stdout).toBe('from 2.50');
    } finally {
      expect(await sandbox.kill()).toBe(true);
    }
  });

  it("serves SDK 2.45, which refuses any key not in E2B's shape before sending it: e2bApiKey passes", async () => {
    const plainKey = Buffer.from(apiKey.slice('e2b_'.length), 'hex').toString('utf8');
    await expect(SandboxV245.create({ apiKey: plainKey })).rejects.toThrow(/Invalid API key format/);
    const sandbox = await SandboxV245.create({ apiKey });
    try {
      expect((await sandbox.commands.run('echo checked key')).stdout).toBe('checked key\n');
    } finally {
      expect(await sandbox.kill()).toBe(true);
    }
  });

  it('serves @mastra/e2b unmodified: executeCommand, a spawned process fed through stdin, its list', async () => {
    // Mastra opens every command with `stdin: true` and waits on it; a string template skips its build.
    const sandbox = new MastraE2bSandbox({ apiKey, template: 'base', timeout: 120_000 });
    await sandbox._start();
    try {
      const result = await sandbox.executeCommand?.('echo', ['hello from mastra', '$HOME']);
      expect(result).toMatchObject({ success: true, exitCode: 0, stdout: 'hello from mastra $HOME\n' });
      const failed = await sandbox.executeCommand?.('sh -c "echo nope >&2; exit 4"');
      // Mastra adds the failed command's output it already streamed once more (its wait() re-emits the
      // CommandExitError's stderr): the same against E2B itself.
      expect(failed).toMatchObject({ success: false, exitCode: 4, stderr: 'nope\nnope\n' });
      const repl = await sandbox.processes?.spawn('while read -r line; do echo "mastra:$line"; done');
      if (repl === undefined) throw new Error('@mastra/e2b offered no process manager');
      expect((await sandbox.processes?.list())?.map((process) => process.pid)).toContain(repl.pid);
      await repl.sendStdin('first\n');
      await expect.poll(() => repl.stdout, { timeout: 15_000 }).toContain('mastra:first');
      expect(await repl.kill()).toBe(true);
      expect((await repl.wait()).exitCode).not.toBe(0);
    } finally {
      await sandbox._destroy();
    }
  }, 60_000);

  it('serves @computesdk/e2b through the same two variables', async () => {
    const provider = computeE2b({ apiKey });
    const created = await provider.sandbox.create();
    try {
      const result = await created.runCommand('echo from computesdk');
      expect(result).toMatchObject({ exitCode: 0, stdout: 'from computesdk\n' });
      expect((await provider.sandbox.getById(created.sandboxId))?.sandboxId).toBe(created.sandboxId);
    } finally {
      await provider.sandbox.destroy(created.sandboxId);
    }
  });
});

describe('pause and connect through the E2B SDK, on a pool that pauses; a create that cannot run in time', () => {
  let runtime: Awaited<ReturnType<typeof startLocalRuntime>>;
  let apiKey: string;
  let restKey: string;
  const slow = new FakeAdapter({ delaysMs: { create: 4000 } });

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      config: parseConfig({
        devMode: true,
        pools: [
          { name: 'fake', adapter: 'fake' },
          { name: 'slow', adapter: 'fake' },
        ],
        templates: [{ name: 'slow', description: 'a backend slower than the create wait' }],
        api: { e2bCreateWaitSeconds: 1 },
      }),
      // The slow template can only go to the slow pool.
      adapters: { fake: new FakeAdapter({ limits: { templates: ['quick'] } }), slow },
      sweepIntervalSeconds: 0,
      reconcileIntervalSeconds: 0,
      poolRefreshIntervalSeconds: 0,
    });
    pointE2bAt(runtime.url);
    const keys = await orgKey(runtime, 'pausers');
    apiKey = keys.e2bApiKey;
    restKey = keys.key;
  }, 60_000);

  afterAll(async () => {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    await runtime?.stop();
  });

  it('pauses (again: false), shows paused, and connect resumes it', async () => {
    const sandbox = await Sandbox.create({ apiKey });
    expect(await sandbox.pause()).toBe(true);
    expect(await sandbox.pause()).toBe(false);
    expect((await sandbox.getInfo()).state).toBe('paused');
    expect(await sandbox.isRunning()).toBe(false);
    const resumed = await Sandbox.connect(sandbox.sandboxId, { apiKey });
    expect((await resumed.getInfo()).state).toBe('running');
    const listed = await Sandbox.list({ apiKey, query: { state: ['running'] } }).nextItems();
    expect(listed.map((item) => item.sandboxId)).toContain(sandbox.sandboxId);
    expect(await resumed.kill()).toBe(true);
  });

  it('removes a sandbox that did not run within the wait and answers 429: no SDK retry leaves a second one', async () => {
    const calls = slow.createRequests.length;
    await expect(Sandbox.create('slow', { apiKey })).rejects.toThrow(/did not start within 1 s/);
    const listed = z
      .object({
        items: z.array(z.object({ id: z.string(), status: z.string(), template: z.string().nullable() })),
      })
      .parse(
        await (
          await fetch(`${runtime.url}/v1/sandboxes?limit=100`, {
            headers: { authorization: `Bearer ${restKey}` },
          })
        ).json(),
      );
    const tried = listed.items.filter((item) => item.template === 'slow');
    // The first try and the SDK's three retries: each was removed before the next began.
    expect(tried).toHaveLength(4);
    for (const item of tried) expect(['terminating', 'terminated']).toContain(item.status);
    expect(slow.createRequests.length - calls).toBeLessThanOrEqual(4);
  }, 60_000);
});
