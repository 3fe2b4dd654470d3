import { readdirSync, readFileSync } from 'node:fs';

/**
 * Pausing a devhost sandbox: every process it runs is stopped (SIGSTOP) where it stands, memory and all,
 * and continued (SIGCONT) on resume, as a VM's pause would. A sandbox's processes are the trees under the
 * commands it launched (the launcher and, in a jail, the jail's first process, under which the kernel
 * keeps every process of the jail's pid namespace, a daemon that left its parent included).
 *
 * Module state on purpose, like devhost's command table: the host is devhost's backend, shared by every
 * container of this process, so a pause through one container freezes what another started.
 */
const groups = new Map<string, Set<() => readonly number[]>>();

/** Registers a launched command's root pids under its sandbox; the returned function unregisters it. */
export function joinGroup(group: string, roots: () => readonly number[]): () => void {
  const members = groups.get(group) ?? new Set();
  members.add(roots);
  groups.set(group, members);
  return () => {
    members.delete(roots);
    if (members.size === 0 && groups.get(group) === members) groups.delete(group);
  };
}

/** Stops every process of the sandbox; how many. A process forked meanwhile is found by the next round. */
export function freezeGroup(group: string): number {
  const stopped = new Set<number>();
  for (let round = 0; round < 10; round += 1) {
    const fresh = descendantsOf(rootsOf(group)).filter((pid) => !stopped.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signal(pid, 'SIGSTOP');
      stopped.add(pid);
    }
  }
  return stopped.size;
}

/** Continues every process of the sandbox; how many. */
export function thawGroup(group: string): number {
  const pids = descendantsOf(rootsOf(group));
  for (const pid of pids) signal(pid, 'SIGCONT');
  return pids.length;
}

function rootsOf(group: string): number[] {
  return [...(groups.get(group) ?? [])].flatMap((roots) => [...roots()]);
}

function signal(pid: number, name: 'SIGSTOP' | 'SIGCONT'): void {
  try {
    process.kill(pid, name);
  } catch {
    // It ended meanwhile.
  }
}

/** The roots and all their descendants, from /proc (each process's parent is in its stat line). */
function descendantsOf(roots: readonly number[]): number[] {
  if (roots.length === 0) return [];
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // ended while listed
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after its last ')'.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const siblings = children.get(parent) ?? [];
    siblings.push(Number(name));
    children.set(parent, siblings);
  }
  const found = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return [...found];
}
