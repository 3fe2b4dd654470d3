import { spawnSync } from 'node:child_process';

/**
 * Bubblewrap (Debian's `bubblewrap` package) puts each devhost command in its own mount and PID
 * namespaces: the sandbox's folder is its `/`, with the host's system folders read-only beneath it, a
 * /proc of its own (it sees its processes only, never the control plane's or their environment), and it
 * dies with the control plane.
 */

let available: boolean | undefined;

/** Whether bwrap is installed and can make namespaces here (as root, or with unprivileged user namespaces). */
export function bubblewrapAvailable(): boolean {
  available ??=
    spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--proc', '/proc', '--dev', '/dev', 'true'], {
      stdio: 'ignore',
      timeout: 10_000,
    }).status === 0;
  return available;
}

/** The host's folders a command needs to run programs, read-only in the jail (those that exist). */
const systemFolders = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc'];

/** The PATH inside the jail (the host's, whose folders are mounted read-only). */
export const jailPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * bwrap's arguments for a command run with `fsRoot` (the sandbox's folder on the host) as its `/` and
 * `cwd` (a path inside the sandbox) as its working directory; the command's own argv follows them.
 */
export function jailArgs(fsRoot: string, cwd: string): string[] {
  return [
    'bwrap',
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
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
    '--chdir',
    cwd,
    '--',
  ];
}
