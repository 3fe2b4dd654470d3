import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, chown, copyFile, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

/**
 * `npm start` as its own process, the way an operator runs it: with a config file, an environment of its
 * own, and (for `user`) as another host user. Used where a test needs the control plane's real process
 * (its environment, its listening sockets, its memory) apart from the test's.
 */
export interface ControlPlaneProcess {
  url: string;
  /** The admin key it printed (or the one given in its environment). */
  adminKey: string;
  pid: number;
  /** Everything it printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  /** A folder of the test's: config, data and (for `user`) the bundle and node live here. */
  dir: string;
  config: unknown;
  args?: string[];
  env?: Record<string, string>;
  /** Run as this host user (the test must be root). The sources are bundled into `dir` so it can read them. */
  user?: { uid: number; gid: number };
}

const repo = resolve(import.meta.dirname, '../..');

export async function startControlPlaneProcess(options: ControlPlaneOptions): Promise<ControlPlaneProcess> {
  const configFile = join(options.dir, 'differently.json');
  await writeFile(configFile, JSON.stringify(options.config));
  let argv = [process.execPath, join(repo, 'infra/local/main.ts')];
  if (options.user !== undefined) {
    // Another user may not be able to reach this checkout or this Node (under /root, or a 0700 temporary
    // folder): both are copied where it can, the sources as one bundle.
    const node = join(options.dir, 'node');
    await copyFile(process.execPath, node);
    await chmod(node, 0o755);
    const bundle = join(options.dir, 'main.mjs');
    await build({
      entryPoints: [join(repo, 'infra/local/main.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: bundle,
      banner: {
        js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
      },
      logLevel: 'error',
    });
    await chownTree(options.dir, options.user);
    argv = [node, bundle];
  }
  const child: ChildProcess = spawn(
    argv[0] ?? '',
    [...argv.slice(1), '--config', configFile, ...(options.args ?? [])],
    {
      cwd: options.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: options.dir, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.user ?? {}),
    },
  );
  let output = '';
  child.stdout?.on('data', (data: Buffer) => {
    output += data.toString();
  });
  child.stderr?.on('data', (data: Buffer) => {
    output += data.toString();
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const started = await new Promise<{ url: string; adminKey: string }>((ready, fail) => {
    const look = () => {
      const url = /Differently is running at (\S+)/.exec(output)?.[1];
      const key = /admin key: (\S+)/.exec(output)?.[1];
      if (url !== undefined && key !== undefined) {
        child.stdout?.off('data', look);
        ready({ url, adminKey: key.startsWith('(') ? (options.env?.DIFFERENTLY_ADMIN_KEY ?? '') : key });
      }
    };
    child.stdout?.on('data', look);
    child.once('exit', (code) => fail(new Error(`the control plane exited with ${code}: ${output}`)));
  });
  return {
    ...started,
    pid: child.pid ?? 0,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT');
        await exited;
      }
    },
  };
}

async function chownTree(dir: string, user: { uid: number; gid: number }): Promise<void> {
  await chown(dir, user.uid, user.gid);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await chown(join(entry.parentPath, entry.name), user.uid, user.gid);
  }
}

/** The process and its descendants (DynamoDB Local's java, say), from /proc. */
export async function processTree(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // The parent is the 2nd field after the command name, which may hold spaces: read after its ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(name)]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i] ?? -1) ?? []));
  return tree;
}

/** The TCP sockets these processes listen on, as `address:port` (IPv4 dotted, IPv6 as in /proc). */
export async function listeningSockets(pids: number[]): Promise<{ address: string; port: number }[]> {
  const inodes = new Set<string>();
  for (const pid of pids) {
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined) inodes.add(inode);
    }
  }
  const sockets: { address: string; port: number }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = (await readFile(table, 'utf8').catch(() => '')).trim().split('\n').slice(1);
    for (const line of lines) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      // 0A: LISTEN.
      if (state !== '0A' || local === undefined || inode === undefined || !inodes.has(inode)) continue;
      const [hex, port] = local.split(':');
      sockets.push({ address: procAddress(hex ?? ''), port: Number.parseInt(port ?? '0', 16) });
    }
  }
  return sockets;
}

/** /proc/net's little-endian hex address as text: 0100007F is 127.0.0.1; IPv6 stays hex, mapped v4 decoded. */
function procAddress(hex: string): string {
  const v4 = (word: string) =>
    (word.match(/../g) ?? [])
      .reverse()
      .map((byte) => Number.parseInt(byte, 16))
      .join('.');
  if (hex.length === 8) return v4(hex);
  // ::ffff:a.b.c.d is 0000000000000000FFFF0000 then the address word.
  if (hex.startsWith('0000000000000000FFFF0000')) return `::ffff:${v4(hex.slice(24))}`;
  if (hex === '00000000000000000000000001000000') return '::1';
  return hex;
}

/** Whether an address from `listeningSockets` is a loopback one. */
export function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.');
}

/** The peak resident memory of a process so far (VmHWM), in bytes. */
export async function peakMemoryBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) * 1024;
}

/** Makes `dir` (and its parents) open for other users to walk through, as a host folder would be. */
export async function openFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, 0o755);
}
