import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  type ControlPlaneProcess,
  isLoopback,
  listeningSockets,
  peakMemoryBytes,
  processTree,
  startControlPlaneProcess,
} from '../helpers/control-plane-process.ts';
import { client, expectError, waitFor } from '../helpers/http-client.ts';

/**
 * The sandbox boundary, tried as a hostile tenant would from inside a devhost sandbox (issue 31): the
 * control plane runs as its own process (`npm start`, with a config file), once as root (as CI and
 * containers run it) and once as an unprivileged user, and every attack below must be refused in both.
 * Each attack first shows it really ran (the preloaded library says where it was loaded, the commands
 * print what they saw), so a refusal is never an attack that did not happen.
 */
const isRoot = process.getuid?.() === 0;
if (!isRoot && process.env.CI !== undefined) throw new Error('the escape suite runs as root in CI (.ci/run)');
const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
if (!hasBwrap && process.env.CI !== undefined) throw new Error('bubblewrap is missing: .ci/run installs it');
const hasCompiler = spawnSync('cc', ['--version']).status === 0;
if (!hasCompiler && process.env.CI !== undefined)
  throw new Error('a C compiler is needed for the preload attack');

const repo = resolve(import.meta.dirname, '../..');
/** An unused host uid for the unprivileged control plane (the jails then run as it too). */
const unprivileged = { uid: 40_123, gid: 40_123 };

const execResult = z.object({ exitCode: z.number(), stdout: z.string(), stderr: z.string() });

const modes = [
  { name: 'as root', user: undefined, args: ['--store', 'dynamodb', '--in-memory'] },
  { name: 'as an unprivileged user', user: unprivileged, args: ['--store', 'memory'] },
];

describe.runIf(isRoot && hasBwrap && hasCompiler).each(modes)(
  'a hostile tenant, control plane $name',
  (mode) => {
    let dir: string;
    let plane: ControlPlaneProcess;
    let api: ReturnType<typeof client>;
    let key: string;
    let orgId: string;
    let devhostRoot: string;
    /** A host folder holding a secret, outside every sandbox, readable by the control plane's user. */
    let hostSecretDir: string;
    const hostSecret = `host-secret-${randomBytes(8).toString('hex')}`;
    /** Kept in the control plane's environment only, as DIFFERENTLY_ADMIN_KEY is. */
    const envSecret = `env-secret-${randomBytes(8).toString('hex')}`;
    let victim: string;
    let attacker: string;
    let preload: Buffer;

    const exec = async (id: string, body: Record<string, unknown>) => {
      const reply = await api.post(`/v1/sandboxes/${id}/exec`, key, body);
      expect(reply.status, reply.text).toBe(200);
      return execResult.parse(reply.body);
    };
    const hostFs = (id: string) => join(devhostRoot, id, 'fs');

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'escape-'));
      await chmod(dir, 0o755);
      devhostRoot = join(dir, 'devhost');
      hostSecretDir = join(dir, 'host-secrets');
      await mkdir(hostSecretDir, { mode: 0o700 });
      await writeFile(join(hostSecretDir, 'f'), `${hostSecret}\n`, { mode: 0o600 });
      if (mode.user !== undefined) {
        await chown(hostSecretDir, mode.user.uid, mode.user.gid);
        await chown(join(hostSecretDir, 'f'), mode.user.uid, mode.user.gid);
      }
      const built = join(dir, 'preload.so');
      const compiled = spawnSync('cc', [
        '-shared',
        '-fPIC',
        '-o',
        built,
        join(repo, 'test/fixtures/escape/preload.c'),
      ]);
      expect(compiled.status, String(compiled.stderr)).toBe(0);
      preload = await readFile(built);
      plane = await startControlPlaneProcess({
        dir,
        user: mode.user,
        config: {
          devMode: true,
          pools: [{ name: 'local', adapter: 'devhost', config: { root: devhostRoot } }],
        },
        args: ['--port', '0', '--containers', '2', ...mode.args],
        env: { DIFFERENTLY_PROBE_SECRET: envSecret },
      });
      api = client(plane.url);
      orgId = z
        .object({ id: z.string() })
        .parse((await api.post('/v1/admin/orgs', plane.adminKey, { name: 'tenants' })).body).id;
      key = z
        .object({ key: z.string() })
        .parse(
          (await api.post(`/v1/admin/orgs/${orgId}/keys`, plane.adminKey, { name: 'hostile' })).body,
        ).key;
      const running = async (env: Record<string, string>) => {
        const created = z
          .object({ id: z.string() })
          .parse(
            (await api.post('/v1/sandboxes', key, { placement: { allowedPools: ['local'] }, env })).body,
          );
        await waitFor(
          async () =>
            z.object({ status: z.string() }).parse((await api.get(`/v1/sandboxes/${created.id}`, key)).body),
          (sandbox) => sandbox.status === 'running' || sandbox.status === 'failed',
          'running',
        );
        return created.id;
      };
      victim = await running({ VICTIM_TOKEN: 'victim-only' });
      expect((await exec(victim, { command: 'echo victim-data > /work/victim-secret' })).exitCode).toBe(0);
      // A loader variable in the create's env: the library does not exist yet, so the loader skips it until
      // the files API puts it there (relative, so a host process started in the sandbox's folder finds it).
      attacker = await running({ LD_PRELOAD: 'work/preload.so' });
      const uploaded = await fetch(
        `${plane.url}/v1/sandboxes/${attacker}/files/content?path=/work/preload.so`,
        {
          method: 'PUT',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
          body: preload,
        },
      );
      expect(uploaded.status).toBe(204);
    }, 120_000);

    afterAll(async () => {
      await plane?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('reaches no process outside the jail with LD_PRELOAD or shell variables, in a create or an exec', async () => {
      await writeFile(join(hostFs(attacker), 'work', 'rc.sh'), 'echo sourced-rc >&2\n');
      const files = [
        join(hostSecretDir, 'f'),
        join(dir, 'differently.json'),
        join(hostFs(victim), 'work/victim-secret'),
      ];
      const result = await exec(attacker, {
        command: 'ls / >/dev/null',
        env: {
          LD_PRELOAD: `/work/preload.so:${join(hostFs(attacker), 'work/preload.so')}`,
          LD_LIBRARY_PATH: '/work',
          BASH_ENV: '/work/rc.sh',
          ENV: '/work/rc.sh',
          ESCAPE_FILES: files.join(':'),
        },
      });
      const output = `${result.stdout}${result.stderr}`;
      // The attack ran: the library was loaded, inside the jail (the command's uid there is the jail's).
      expect(output).toMatch(/preloaded pid=\d+ uid=1000/);
      expect(output).not.toMatch(/preloaded pid=\d+ uid=(0|40123|65534)\b/);
      expect(output).not.toContain('LEAK');
      expect(output).not.toContain('READ ');
      expect(output).not.toContain(envSecret);
      expect(output).not.toContain(hostSecret);
      expect(output).not.toContain(plane.adminKey);
    });

    it('reaches none of the control plane’s services: each listens on loopback only, and the sandbox has its own network', async () => {
      const sockets = await listeningSockets(await processTree(plane.pid));
      // The API, the embedded SQS server, and (as root, with --store dynamodb) DynamoDB Local.
      expect(sockets.length).toBeGreaterThanOrEqual(mode.user === undefined ? 3 : 2);
      for (const socket of sockets)
        expect(isLoopback(socket.address), `${socket.address}:${socket.port}`).toBe(true);
      const hostAddresses = Object.values(networkInterfaces())
        .flat()
        .filter((address) => address !== undefined && address.family === 'IPv4' && !address.internal)
        .map((address) => address?.address ?? '');
      const targets = sockets.flatMap((socket) => [
        `127.0.0.1:${socket.port}`,
        ...hostAddresses.map((address) => `${address}:${socket.port}`),
      ]);
      const probe = await exec(attacker, {
        args: [
          'perl',
          '-MIO::Socket::INET',
          '-e',
          'for (@ARGV) { my $s = IO::Socket::INET->new(PeerAddr => $_, Timeout => 2); print "$_ ", ($s ? "open" : "closed"), "\\n" }',
          ...targets,
        ],
      });
      const seen = probe.stdout.trim().split('\n');
      expect(seen).toHaveLength(targets.length);
      for (const line of seen) expect(line).toMatch(/ closed$/);
      // The jail's own network: a loopback of its own and nothing else.
      const interfaces = await exec(attacker, {
        command: 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "',
      });
      expect(interfaces.stdout.trim()).toBe('lo');
    });

    it("keeps root's powers out of the jail: no capabilities, an unprivileged uid, read-only system folders, no nested namespaces", async () => {
      const escapedFile = join(dir, `escaped-${randomBytes(4).toString('hex')}`);
      const script = [
        'grep -E "^Cap(Eff|Prm|Bnd):" /proc/self/status',
        'mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED',
        'mount -t tmpfs none /usr 2>/dev/null && echo MOUNTED',
        '( : > /usr/escape ) 2>/dev/null && echo WROTE-USR',
        'unshare -Ur true 2>/dev/null && echo NESTED-USERNS',
        `cat ${join(hostSecretDir, 'f')} 2>/dev/null && echo READ-HOST`,
        `cat ${join(hostFs(victim), 'work/victim-secret')} 2>/dev/null && echo READ-OTHER`,
        `( echo x > ${escapedFile} ) 2>/dev/null && echo WROTE-HOST`,
        'find / -xdev -name victim-secret 2>/dev/null | grep -q . && echo FOUND-OTHER',
        'ls /dev | tr "\\n" " "; echo',
        'echo "processes $(ls /proc | grep -c "^[0-9]")"',
        'echo "root $(ls / | tr "\\n" " ")"',
        'touch /work/made-by-command',
      ].join('\n');
      const result = await exec(attacker, { command: script });
      expect(result.stdout).toMatch(/CapEff:\s+0+\n/);
      expect(result.stdout).toMatch(/CapPrm:\s+0+\n/);
      expect(result.stdout).toMatch(/CapBnd:\s+0+\n/);
      for (const marker of [
        'REMOUNTED',
        'MOUNTED',
        'WROTE-USR',
        'NESTED-USERNS',
        'READ-HOST',
        'READ-OTHER',
        'WROTE-HOST',
        'FOUND-OTHER',
      ]) {
        expect(result.stdout, marker).not.toContain(marker);
      }
      expect(result.stdout).not.toContain(hostSecret);
      expect(result.stdout).not.toContain('victim-data');
      await expect(stat(escapedFile)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(result.stdout).not.toMatch(/\b(sd[a-z]|nvme\d|vd[a-z]|xvd[a-z]|mem|kmsg)\b/);
      expect(Number(/processes (\d+)/.exec(result.stdout)?.[1])).toBeLessThan(8);
      expect(/root (.*)/.exec(result.stdout)?.[1]?.trim().split(' ').sort()).toEqual(
        expect.arrayContaining(['dev', 'proc', 'tmp', 'usr', 'work']),
      );
      expect(/root (.*)/.exec(result.stdout)?.[1]).not.toMatch(/\b(root|home|var|srv|opt|mnt)\b/);
      // What the command made belongs, on the host, to an unprivileged user: never root.
      const made = await lstat(join(hostFs(attacker), 'work/made-by-command'));
      expect(made.uid).not.toBe(0);
      expect(made.uid).toBe(mode.user?.uid ?? 65534);
    });

    it("gives a terminal process the jail's boundary: no capabilities, its own terminals only, kill -1 ends only the jail", async () => {
      const processes = (id: string, rest = '') => `/v1/sandboxes/${id}/processes${rest}`;
      const pidOf = (reply: { status: number; text: string; body: unknown }) => {
        expect(reply.status, reply.text).toBe(201);
        return z.object({ pid: z.number() }).parse(reply.body).pid;
      };
      // Another tenant's terminal is open meanwhile: it must not be among the attacker's.
      const victimTerminal = pidOf(
        await api.post(processes(victim), key, { args: ['cat'], pty: { cols: 80, rows: 24 } }),
      );
      const script = [
        'grep -E "^Cap(Eff|Bnd):" /proc/self/status',
        'echo "tty $(tty)"',
        'echo "pts $(ls /dev/pts | tr "\\n" " ")"',
        `cat ${join(hostSecretDir, 'f')} 2>/dev/null && echo READ-HOST`,
        'for p in /dev/pts/[0-9]*; do [ "$p" = "$(tty)" ] || { ( echo probe > "$p" ) 2>/dev/null && echo "WROTE-$p"; }; done',
        'echo "processes $(ls /proc | grep -c "^[0-9]")"',
      ].join('; ');
      const run = async (command: string) => {
        const pid = pidOf(
          await api.post(processes(attacker), key, {
            args: ['sh', '-c', command],
            pty: { cols: 80, rows: 24 },
          }),
        );
        let seen = '';
        const exitCode = await waitFor(
          async () => {
            const read = await api.get(processes(attacker, `/${pid}/output`), key);
            seen += z.object({ stdout: z.string() }).parse(read.body).stdout;
            return z.object({ exitCode: z.number().nullable() }).parse(read.body).exitCode;
          },
          (code) => code !== null,
          'the terminal process ended',
        );
        return { seen, exitCode };
      };
      const { seen, exitCode } = await run(script);
      expect(exitCode).toBe(0);
      expect(seen).toMatch(/CapEff:\s+0+\r?\n/);
      expect(seen).toMatch(/CapBnd:\s+0+\r?\n/);
      expect(seen).toMatch(/tty \/dev\/pts\/0\r?\n/);
      // The jail's own devpts: its one terminal, never the victim's or the host's.
      expect(/pts (.*)/.exec(seen)?.[1]?.trim().split(' ').sort()).toEqual(['0', 'ptmx']);
      expect(seen).not.toContain('READ-HOST');
      expect(seen).not.toContain(hostSecret);
      expect(seen).not.toContain('WROTE-');
      expect(Number(/processes (\d+)/.exec(seen)?.[1])).toBeLessThan(8);
      // kill -1 from a terminal ends what the jail holds (its terminal's helper too, where it runs as the
      // same user), and nothing else: the victim's terminal, the control plane and its sandboxes go on.
      const killed = await run('kill -9 -1; echo after-kill');
      expect(killed.exitCode).not.toBe(0);
      expect(killed.seen).not.toContain('after-kill');
      const victimView = await api.get(processes(victim, `/${victimTerminal}`), key);
      expect(victimView.body).toMatchObject({ exitCode: null });
      expect((await exec(victim, { command: 'cat /work/victim-secret' })).stdout).toBe('victim-data\n');
      expect((await exec(attacker, { command: 'echo still-here' })).stdout).toBe('still-here\n');
      await api.post(processes(victim, `/${victimTerminal}/signal`), key, { signal: 'SIGKILL' });
    });

    it('cannot lead the files API out of the sandbox by racing it with symbolic links', async () => {
      // A command swaps /work/d between a real folder and a link to a host folder, as fast as it can.
      // Streamed, so it may outlast the synchronous exec's 25 s on a slow machine.
      const swapping = fetch(`${plane.url}/v1/sandboxes/${attacker}/exec?stream=1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          timeoutSeconds: 600,
          command: `while [ ! -e /work/stop ]; do rm -rf /work/d; mkdir /work/d; echo inside > /work/d/f; rm -rf /work/d; ln -s ${hostSecretDir} /work/d; done; echo swapped`,
        }),
      }).then((response) => response.text());
      const statuses = new Map<number, number>();
      for (let i = 0; i < 300; i++) {
        const read = await fetch(`${plane.url}/v1/sandboxes/${attacker}/files/content?path=/work/d/f`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const text = await read.text();
        expect(text).not.toContain(hostSecret);
        statuses.set(read.status, (statuses.get(read.status) ?? 0) + 1);
        if (i % 3 === 0) {
          const wrote = await fetch(
            `${plane.url}/v1/sandboxes/${attacker}/files/content?path=/work/d/planted`,
            {
              method: 'PUT',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
              body: 'planted',
            },
          );
          await wrote.text();
        }
        // A listing that followed the link would show the host's f, of the secret's size.
        const listed = await api.get(`/v1/sandboxes/${attacker}/files?path=/work/d`, key);
        if (listed.status === 200) {
          const { items } = z
            .object({ items: z.array(z.object({ name: z.string(), size: z.number() })) })
            .parse(listed.body);
          expect(items.filter((item) => item.size === hostSecret.length + 1)).toEqual([]);
        }
      }
      await writeFile(join(hostFs(attacker), 'work', 'stop'), '');
      expect(await swapping).toContain('swapped');
      // The race happened: both sides of the swap were seen, the real folder (200) and the link (400).
      expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
      expect(statuses.get(400) ?? 0).toBeGreaterThan(0);
      expect(await readdir(hostSecretDir)).toEqual(['f']);
      expect(await readFile(join(hostSecretDir, 'f'), 'utf8')).toBe(`${hostSecret}\n`);
    });

    it('refuses a huge file before reading it: the control plane never holds it', async () => {
      expect(
        (await exec(attacker, { command: 'truncate -s 1500M /work/big && echo made' })).stdout,
      ).toContain('made');
      const before = await peakMemoryBytes(plane.pid);
      for (let i = 0; i < 3; i++) {
        expectError(
          await api.get(`/v1/sandboxes/${attacker}/files/content?path=/work/big`, key),
          413,
          'payload_too_large',
        );
      }
      expect((await peakMemoryBytes(plane.pid)) - before).toBeLessThan(256 * 1024 * 1024);
    });

    it('cannot make the MCP endpoint buffer a command’s output for a client that never reads', async () => {
      const before = await peakMemoryBytes(plane.pid);
      const call = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'exec',
          arguments: {
            id: attacker,
            timeoutSeconds: 120,
            command:
              'i=0; while [ ! -e /work/stop-mcp ]; do head -c 65536 /dev/zero | tr "\\0" a; echo; i=$((i+1)); echo $i > /work/produced; done',
          },
          _meta: { progressToken: 'p' },
        },
      });
      const target = new URL('/v1/mcp', plane.url);
      const stalled = httpRequest({
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': Buffer.byteLength(call),
        },
      });
      const answered = new Promise<number>((resolve, reject) => {
        stalled.once('response', (response) => {
          // Read nothing, ever: the connection's buffers fill and stay full.
          response.pause();
          resolve(response.statusCode ?? 0);
        });
        stalled.once('error', reject);
      });
      stalled.end(call);
      expect(await answered).toBe(200);
      const produced = async () =>
        Number(
          (await readFile(join(hostFs(attacker), 'work/produced'), 'utf8').catch(() => '0')).trim() || '0',
        );
      // The command blocks once the bound and the connection's buffers are full: wait until it has been
      // still for a while, or has written more than any bound allows (32 MiB in 64 KiB lines).
      const limit = 512;
      let last = -1;
      let still = 0;
      await waitFor(
        async () => {
          const now = await produced();
          still = now === last && now > 0 ? still + 1 : 0;
          last = now;
          return now;
        },
        (now) => now > limit || still >= 20,
        'the command to block on its output, or to pass the bound',
        60_000,
      );
      expect(last).toBeLessThanOrEqual(limit);
      expect((await peakMemoryBytes(plane.pid)) - before).toBeLessThan(256 * 1024 * 1024);
      await writeFile(join(hostFs(attacker), 'work', 'stop-mcp'), '');
      stalled.destroy();
    });

    it('answers 400, never 500, for a name over 255 bytes and a quota too small to store', async () => {
      const long = `/work/${'a'.repeat(300)}`;
      const wrote = await api.put(`/v1/sandboxes/${attacker}/files/content?path=${long}`, key, {});
      expect(expectError(wrote, 400, 'invalid_request').error.message).toMatch(/255/);
      expectError(
        await api.get(`/v1/sandboxes/${attacker}/files/content?path=${long}`, key),
        400,
        'invalid_request',
      );
      const quota = await api.put(`/v1/admin/orgs/${orgId}/quota`, plane.adminKey, { maxCPU: 1e-200 });
      expect(expectError(quota, 400, 'invalid_request').error.message).toMatch(/maxCPU/);
    });

    it('cannot keep its folder on the host after a delete by locking it', async () => {
      const locked = z
        .object({ id: z.string() })
        .parse((await api.post('/v1/sandboxes', key, { placement: { allowedPools: ['local'] } })).body).id;
      await waitFor(
        async () =>
          z.object({ status: z.string() }).parse((await api.get(`/v1/sandboxes/${locked}`, key)).body),
        (sandbox) => sandbox.status === 'running',
        'running',
      );
      const made = await exec(locked, {
        command:
          'mkdir -p /work/locked/deep && touch /work/locked/deep/f && chmod 000 /work/locked/deep /work/locked && echo locked',
      });
      expect(made.stdout).toContain('locked');
      expect((await api.delete(`/v1/sandboxes/${locked}`, key)).status).toBe(202);
      await waitFor(
        async () =>
          z.object({ status: z.string() }).parse((await api.get(`/v1/sandboxes/${locked}`, key)).body),
        (sandbox) => sandbox.status === 'terminated' || sandbox.status === 'failed',
        'terminated',
      ).then((sandbox) => expect(sandbox.status).toBe('terminated'));
      await expect(stat(join(devhostRoot, locked))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('reports in the trust report what the jail was measured to isolate', async () => {
      const report = z
        .object({
          pools: z.array(
            z.object({ name: z.string(), isolation: z.string(), isolationVerified: z.boolean() }),
          ),
        })
        .parse((await api.get('/v1/trust', key)).body);
      const local = report.pools.find((pool) => pool.name === 'local');
      expect(local?.isolationVerified).toBe(true);
      expect(local?.isolation).toMatch(/measured at start: no capabilities yes/);
      expect(local?.isolation).toMatch(/own network namespace \(loopback only\) yes/);
      expect(local?.isolation).toMatch(/unprivileged host user yes/);
    });
  },
);
