import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import * as z from '../../lib/zod.ts';
import { joinGroup } from './freezer.ts';
import { jailInfoFd } from './jail.ts';

export interface SpawnLaunch {
  /** argv to spawn: the jail's bwrap (see jailCommand), or the command itself unjailed. */
  argv: string[];
  /** Written to fd 3 and closed (bwrap's `--args 3`); set exactly when the command runs in a jail. */
  fd3?: string | undefined;
  /** The host user to run as (the control plane must be root to name another). */
  user?: { uid: number; gid: number } | undefined;
  cwd: string;
  env: Record<string, string>;
  /** The sandbox it runs for: its processes are frozen with the sandbox's on a pause (./freezer.ts). */
  group?: string | undefined;
}

export interface SpawnedCommand {
  child: ChildProcessWithoutNullStreams;
  /** Ends the command and everything it started, in the jail or out of it. Safe to call more than once. */
  kill(): void;
}

// bwrap's information, read liberally: it may add fields of its own.
const jailInfoSchema = z.looseObject({ 'child-pid': z.int().check(z.positive()) });

/**
 * Starts a command in a process group of its own, so a kill ends everything it started. In a jail, the
 * launcher's group is not enough: bwrap's pid 1 of the jail makes a session of its own, and dies with the
 * launcher only once it has set that up (a kill that lands before leaves the jail running with no parent).
 * So a kill waits for bwrap to say its child's pid (it does right after making it) and kills that pid too:
 * when a pid namespace's first process dies, the kernel ends every process in it.
 */
export function spawnInOwnGroup(launch: SpawnLaunch): SpawnedCommand {
  const jailed = launch.fd3 !== undefined;
  const [file, ...args] = launch.argv;
  const child = spawn(file ?? '/bin/false', args, {
    cwd: launch.cwd,
    env: launch.env,
    detached: true,
    stdio: jailed ? ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    ...(launch.user !== undefined && { uid: launch.user.uid, gid: launch.user.gid }),
  }) as ChildProcessWithoutNullStreams;

  let jailPid: number | undefined;
  if (launch.group !== undefined) {
    const leave = joinGroup(launch.group, () =>
      [child.pid, jailPid].filter((pid): pid is number => pid !== undefined),
    );
    child.once('exit', leave);
    child.once('error', leave);
  }
  let infoSettled = !jailed;
  let killRequested = false;
  const killNow = () => {
    for (const target of [jailPid, child.pid === undefined ? undefined : -child.pid]) {
      if (target === undefined) continue;
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already exited
      }
    }
  };

  if (jailed) {
    const fd3 = child.stdio[3] as Writable | null;
    fd3?.on('error', () => undefined);
    fd3?.end(launch.fd3);
    const info = child.stdio[jailInfoFd] as Readable | null;
    let text = '';
    const said = (): number | undefined => {
      try {
        return jailInfoSchema.safeParse(JSON.parse(text)).data?.['child-pid'];
      } catch {
        return undefined; // not all of it yet, or bwrap ended before it said anything
      }
    };
    const settle = () => {
      if (infoSettled) return;
      infoSettled = true;
      jailPid = said();
      if (killRequested) killNow();
    };
    if (info === null) settle();
    else {
      info.setEncoding('utf8');
      info.on('data', (chunk: string) => {
        text += chunk;
        // The jail may hold the fd open as long as it runs: the whole object is the word, not the fd's end.
        if (said() !== undefined) settle();
      });
      info.on('error', settle);
      info.on('close', settle);
    }
  }

  return {
    child,
    kill: () => {
      killRequested = true;
      // Until bwrap has said its child's pid, killing bwrap could orphan that child: wait for the word.
      if (infoSettled) killNow();
    },
  };
}
