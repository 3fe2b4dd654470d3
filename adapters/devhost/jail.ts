import { spawnSync } from 'node:child_process';
import { closeSync, lstatSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapterErrors } from '../../lib/adapter/errors.ts';

/**
 * Bubblewrap (Debian's `bubblewrap` package) puts each devhost command in a jail of its own:
 *
 * - run by an unprivileged host user: when the control plane is root (CI, containers), bwrap itself is
 *   started as the pool's sandbox user (`runAsUid`/`runAsGid`, nobody by default), so no process of the
 *   jail ever holds root's uid or a capability on the host;
 * - its own user namespace (the command is uid 1000 inside), with every capability dropped and no further
 *   user namespaces (so no nested namespace can win back the right to remount anything);
 * - its own mount namespace: the sandbox's folder is its `/`, the host's system folders are bound
 *   read-only beneath it, nothing else of the host is there;
 * - its own network namespace: only a loopback of its own, so no host service (the store, the queues,
 *   the API, another sandbox's server) can be reached at 127.0.0.1 or any other host address;
 * - its own PID, IPC and UTS namespaces, a new session (no terminal injection), and it dies with the
 *   control plane;
 * - an environment of its own: bwrap starts with a fixed one and sets the tenant's variables only for the
 *   command (`--clearenv`, `--setenv`), and those options reach bwrap through a pipe (`--args 3`), never
 *   its own environment or argv. So a loader variable (LD_PRELOAD, LD_LIBRARY_PATH, ...) or a shell one
 *   (BASH_ENV, ENV) only ever reaches the tenant's own process inside the jail.
 */

let available: boolean | undefined;

/**
 * Whether bwrap is installed and can make the jail's namespaces here, as the user that would run it
 * (the default sandbox user when this process is root). What the jail then isolates is `probeJail`'s.
 */
export function bubblewrapAvailable(): boolean {
  const user = jailUser(defaultSandboxUser);
  available ??=
    spawnSync(
      'bwrap',
      ['--unshare-user', '--unshare-net', '--ro-bind', '/', '/', '--unshare-pid', '--proc', '/proc', 'true'],
      { stdio: 'ignore', timeout: 10_000, cwd: '/', env: launcherEnv, ...(user ?? {}) },
    ).status === 0;
  return available;
}

/** nobody:nogroup, the sandbox user a root control plane runs jails as unless the pool names another. */
export const defaultSandboxUser: JailUser = { uid: 65534, gid: 65534 };

/** The host's folders a command needs to run programs, read-only in the jail (those that exist). */
const systemFolders = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc'];

/** The PATH inside the jail (the host's, whose folders are mounted read-only). */
export const jailPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The command's uid and gid inside its user namespace (the host sees the sandbox user). */
export const jailUid = 1000;

/** The environment bwrap itself runs with: fixed, never the control plane's, never the tenant's. */
export const launcherEnv: Record<string, string> = { PATH: jailPath };

/** The host user that bwrap, and so every jailed process, runs as. Undefined: the control plane's own. */
export interface JailUser {
  uid: number;
  gid: number;
}

/**
 * Who runs the jail: the sandbox user when the control plane is root (a root-started bwrap would hand its
 * uid to the jail), otherwise the control plane's own unprivileged user.
 */
export function jailUser(runAs: JailUser): JailUser | undefined {
  return process.getuid?.() === 0 ? runAs : undefined;
}

/**
 * The fd bwrap writes its information to (`{"child-pid": N}`): the jail's pid 1 as the host sees it. That
 * process sets up a session of its own, so a kill of the launcher's group misses it, and it dies with its
 * parent only once it has asked to: a kill must reach it by pid (see jailed-spawn.ts).
 */
export const jailInfoFd = 4;

export interface JailCommand {
  /** argv for spawn: bwrap reading its options from fd 3, telling its child's pid on fd 4, then the command. */
  argv: string[];
  /** What to write to fd 3: the NUL-separated options (mounts, environment, working directory). */
  options: string;
}

/**
 * The jail for `argv`, with `fsRoot` (the sandbox's folder on the host) as its `/`, `cwd` (a path inside
 * the sandbox) as its working directory and exactly `env` as the command's environment.
 */
export function jailCommand(
  fsRoot: string,
  cwd: string,
  env: Record<string, string>,
  argv: string[],
  /**
   * The uid and gid inside the jail's user namespace: jailUid, or 0 for a command asked to run as root.
   * Either maps to the same one host user, with every capability dropped: a root inside holds nothing
   * on the host, and every file of the sandbox is its own, as it is jailUid's.
   */
  insideUid: number = jailUid,
): JailCommand {
  const options = [
    '--unshare-user',
    '--uid',
    String(insideUid),
    '--gid',
    String(insideUid),
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'sandbox',
    '--new-session',
    '--die-with-parent',
    '--bind',
    fsRoot,
    '/',
    ...systemFolders.flatMap((folder) => ['--ro-bind-try', folder, folder]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--dir',
    '/tmp',
    '--dir',
    '/work',
    '--clearenv',
    ...Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]),
    '--chdir',
    cwd,
  ];
  // NUL separates the options on the pipe: one inside a value would let a tenant add options of its own.
  for (const option of [...options, ...argv]) {
    if (option.includes('\0')) throw adapterErrors.invalidRequest('a NUL byte cannot be passed to a command');
  }
  return {
    argv: ['bwrap', '--args', '3', '--info-fd', String(jailInfoFd), '--', ...argv],
    options: options.map((o) => `${o}\0`).join(''),
  };
}

/** The probe's check that the jail has no network but a loopback of its own (egress deny, measured). */
export const jailNetworkCheck = 'own network namespace (loopback only)';

/** One thing the jail was checked to do, and what was seen. */
export interface JailCheck {
  name: string;
  passed: boolean;
  seen: string;
}

export interface JailProbe {
  /** Whether bwrap ran at all with the jail's options, as the sandbox user. */
  runs: boolean;
  /** Why it did not, when it did not. */
  error?: string;
  checks: JailCheck[];
  /** Every check ran and passed. */
  verified: boolean;
}

/**
 * What the jail really isolates, measured once per process and sandbox user: a jail is made exactly as
 * a command's would be, in a scratch folder under the pool's root, and a script inside reports what it
 * sees. The trust report says `isolationVerified: true` only when every check here passed.
 */
const probes = new Map<string, JailProbe>();

export function probeJail(root: string, user: JailUser | undefined): JailProbe {
  const key = `${root}\0${user?.uid ?? ''}:${user?.gid ?? ''}`;
  const known = probes.get(key);
  if (known !== undefined) return known;
  const probe = runProbe(root, user);
  probes.set(key, probe);
  return probe;
}

/** The probe's script: each line `name=value`, read by `runProbe`. Only the shell's builtins and /proc. */
const probeScript = [
  'while read -r key value rest; do case "$key" in CapEff:) echo "caps=$value";; CapBnd:) echo "bounding=$value";; esac; done < /proc/self/status',
  '( : > /.differently-probe-owner ) 2>/dev/null && echo "made=yes" || echo "made=no"',
  'n=0; while read -r line; do n=$((n + 1)); done < /proc/net/dev; echo "interfaces=$((n - 2))"',
  'n=0; for entry in /proc/[0-9]*; do n=$((n + 1)); done; echo "processes=$n"',
  '( : > /usr/.differently-probe ) 2>/dev/null && echo "systemwrite=yes" || echo "systemwrite=no"',
  'test -e "$1" && echo "hostroot=visible" || echo "hostroot=hidden"',
  'if command -v unshare >/dev/null; then unshare -U true 2>/dev/null && echo "userns=made" || echo "userns=refused"; else echo "userns=untested (no unshare)"; fi',
].join('\n');

function runProbe(root: string, user: JailUser | undefined): JailProbe {
  let scratch: string | undefined;
  try {
    scratch = mkdtempSync(join(root, '.probe-'));
    if (user !== undefined) spawnSync('chown', [`${user.uid}:${user.gid}`, scratch]);
    const jail = jailCommand(scratch, '/', launcherEnv, ['/bin/sh', '-c', probeScript, 'probe', root]);
    const fd3 = optionsOnFd3(jail.options);
    const run = spawnSync(jail.argv[0] ?? 'bwrap', jail.argv.slice(1), {
      input: '',
      stdio: ['pipe', 'pipe', 'pipe', fd3.fd, 'pipe'],
      env: launcherEnv,
      cwd: '/',
      timeout: 10_000,
      ...(user !== undefined && { uid: user.uid, gid: user.gid }),
    });
    fd3.close();
    if (run.error !== undefined || run.status !== 0) {
      const said = `${run.error?.message ?? ''}${String(run.stderr ?? '')}`.trim();
      return { runs: false, error: said || `bwrap exited with ${run.status}`, checks: [], verified: false };
    }
    const seen = new Map(
      String(run.stdout)
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
    );
    const value = (name: string) => seen.get(name) ?? 'not reported';
    // Whose the file the jail made is on the host: the uid every jailed process really has there.
    const hostUid = lstatSync(join(scratch, '.differently-probe-owner'), { throwIfNoEntry: false })?.uid;
    const checks: JailCheck[] = [
      { name: 'no capabilities', passed: /^0+$/.test(value('caps')), seen: `CapEff ${value('caps')}` },
      {
        name: 'empty capability bounding set',
        passed: /^0+$/.test(value('bounding')),
        seen: `CapBnd ${value('bounding')}`,
      },
      {
        name: 'unprivileged host user',
        passed: hostUid !== undefined && hostUid !== 0 && hostUid === (user?.uid ?? process.getuid?.()),
        seen: hostUid === undefined ? 'no file made' : `files made as host uid ${hostUid}`,
      },
      {
        name: jailNetworkCheck,
        passed: value('interfaces') === '1',
        seen: `${value('interfaces')} interface(s)`,
      },
      {
        name: 'own PID namespace',
        passed: Number(value('processes')) <= 3,
        seen: `${value('processes')} process(es) visible`,
      },
      {
        name: 'system folders read-only',
        passed: value('systemwrite') === 'no',
        seen: `write to /usr: ${value('systemwrite')}`,
      },
      {
        name: "host's files hidden",
        passed: value('hostroot') === 'hidden',
        seen: `the pool's root ${value('hostroot')}`,
      },
      {
        name: 'no further user namespaces',
        passed: value('userns') === 'refused',
        seen: `a new user namespace: ${value('userns')}`,
      },
    ];
    return { runs: true, checks, verified: checks.every((check) => check.passed) };
  } catch (error) {
    return { runs: false, error: (error as Error).message, checks: [], verified: false };
  } finally {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * spawnSync feeds stdin only, so the probe hands bwrap its options on fd 3 from a file: written, opened
 * again for reading and unlinked at once, so nothing of it stays on disk.
 */
function optionsOnFd3(options: string): { fd: number; close: () => void } {
  const path = join(tmpdir(), `differently-bwrap-${process.pid}-${Date.now()}`);
  writeFileSync(path, options, { mode: 0o600 });
  const fd = openSync(path, 'r');
  unlinkSync(path);
  return { fd, close: () => closeSync(fd) };
}
