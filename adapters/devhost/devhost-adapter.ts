import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { chmod, cp, lchown, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { unboundedCapacity } from '../../lib/adapter/capacity.ts';
import { adapterErrors, fileSystemError } from '../../lib/adapter/errors.ts';
import {
  type AdapterInfo,
  adapterProtocolVersion,
  type CallOptions,
  type Capabilities,
  type Capacity,
  type CreateRequest,
  type ExecEmit,
  type ExecOptions,
  type ExecutionAdapter,
  type FileInfo,
  type FileSystem,
  type Instance,
  type Lifecycle,
  type Pauser,
  type ReadFileOptions,
  type SnapshotInfo,
  type SnapshotOptions,
  type Snapshotter,
  type Streamer,
} from '../../lib/adapter/port.ts';
import type {
  ProcessHost,
  ProcessInfo,
  ProcessOutput,
  ProcessSignal,
  ProcessStartRequest,
  TerminalSize,
} from '../../lib/adapter/processes.ts';
import { isId, newId } from '../../lib/ids.ts';
import { safeParseJsonText } from '../../lib/json-text.ts';
import type { ExecRequest, ExecResult } from '../../lib/schemas/sandboxes.ts';
import * as z from '../../lib/zod.ts';
import { ProcessTable } from '../process-table.ts';
import type { DevhostConfig } from './config.ts';
import { freezeGroup, thawGroup } from './freezer.ts';
import { helperArgv, launchInteractive } from './interactive-process.ts';
import {
  bubblewrapAvailable,
  type JailProbe,
  type JailUser,
  jailCommand,
  jailNetworkCheck,
  jailPath,
  jailUid,
  jailUser,
  launcherEnv,
  probeJail,
} from './jail.ts';
import { CappedBuffer, runProcess } from './run-process.ts';
import {
  ensureSandboxDirectory,
  listSandboxDirectory,
  readSandboxFile,
  writeSandboxFile,
} from './sandbox-files.ts';

export const devhostDefaultTimeoutSeconds = 600;
export const devhostMaxTimeoutSeconds = 7200;

/** A read with no limit of the caller's (a plugin's client) takes at most this much (the wire's limit). */
const defaultReadMaxBytes = 100 * 1024 * 1024;

const metaSchema = z.object({
  sandboxId: z.string(),
  installation: z.string(),
  env: z.record(z.string(), z.string()),
  state: z.enum(['running', 'stopped', 'paused']),
  createdAt: z.string(),
});
type Meta = z.infer<typeof metaSchema>;

export const devhostFeatures = [
  'exec',
  'exec.stream',
  'exec.stdin',
  'exec.pty',
  'files',
  'lifecycle.stop-start',
  'lifecycle.pause-resume',
  'persistence.disk',
  'snapshots.disk',
  'fork',
  'isolation.none',
];

/** Snapshots live beside the sandboxes, as copies of their filesystem. */
const snapshotsDir = '.snapshots';
const snapshotRefPattern = /^dsnap_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Commands running on this host, by instance. Module state on purpose: the host is devhost's backend,
 * shared by every container of this process, so a delete through any of them ends the instance's commands.
 */
const runningCommands = new Map<string, Set<AbortController>>();

/**
 * Interactive processes on this host, by instance and pid: module state for the same reason as the
 * commands (any container's call reaches the process another container started, as on a real backend).
 */
const interactive = new ProcessTable();

/** Ends every devhost command of this process (the local runtime's shutdown). */
export function endDevhostCommands(): void {
  for (const commands of runningCommands.values()) for (const command of commands) command.abort();
  runningCommands.clear();
  interactive.endEverything();
}

/**
 * A sandbox's metadata, replaced whole: written aside and renamed into place, so a read that runs with a
 * state change (a command starting while the sandbox stops) sees the old file or the new, never a torn one.
 */
async function writeMeta(dir: string, meta: unknown): Promise<void> {
  const aside = join(dir, `.meta.json.${process.pid}.${Math.random().toString(36).slice(2)}`);
  await writeFile(aside, JSON.stringify(meta), { mode: 0o600 });
  await rename(aside, join(dir, 'meta.json'));
}

/** The only template a devhost pool has: the host environment (npm start's catalog names it too). */
export const devhostTemplate = 'default';

/**
 * The sandbox and snapshot folders this process made. Module state for the same reason as the commands:
 * a local runtime whose store keeps nothing after a stop removes them then (reapDevhostFolders), so a run
 * in memory leaves no folders behind that no record names any more.
 */
const madeHere = new Set<string>();

/**
 * Removes the sandbox and snapshot folders this process made under these pool roots (the local runtime's
 * stop, when its store keeps nothing); how many.
 */
export async function reapDevhostFolders(roots: readonly string[]): Promise<number> {
  const under = roots.map((root) => `${resolvePath(root)}/`);
  const folders = [...madeHere].filter((folder) => under.some((root) => folder.startsWith(root)));
  for (const folder of folders) madeHere.delete(folder);
  await Promise.all(folders.map((folder) => removeTree(folder).catch(() => undefined)));
  return folders.length;
}

/**
 * Runs sandboxes as directories on this host and commands as host processes: no isolation, so it is
 * allowed in dev mode only. The sandbox's `/` is its `fs` directory; cwd and file paths resolve there.
 * The control plane's own environment is never passed to commands (it may hold keys).
 */

export class DevhostAdapter
  implements ExecutionAdapter, Streamer, FileSystem, Lifecycle, Pauser, Snapshotter, ProcessHost
{
  readonly #config: DevhostConfig;

  /** The jail's measured isolation; undefined when commands run unjailed. */
  readonly #probe: JailProbe | undefined;

  /** The host user of every sandbox process and file; undefined: this process's own. */
  readonly #owner: JailUser | undefined;

  constructor(config: DevhostConfig) {
    this.#config = config;
    if (config.isolation === 'bubblewrap' && !bubblewrapAvailable()) {
      throw adapterErrors.invalidRequest(
        'devhost isolation bubblewrap: bwrap is not installed or cannot make namespaces here (apt-get install bubblewrap)',
      );
    }
    const jailed = config.isolation !== 'none' && bubblewrapAvailable();
    this.#owner = jailed ? jailUser({ uid: config.runAsUid, gid: config.runAsGid }) : undefined;
    if (jailed) {
      mkdirSync(config.root, { recursive: true, mode: 0o711 });
      // The sandbox user walks through the root to its own folder (and lists nothing there).
      if (this.#owner !== undefined && (statSync(config.root).mode & 0o001) === 0)
        chmodSync(config.root, 0o711);
      this.#probe = probeJail(config.root, this.#owner);
      // bwrap is here but the jail cannot be made: a misconfiguration, never a reason to run unjailed.
      if (!this.#probe.runs) {
        throw adapterErrors.invalidRequest(
          `devhost: the bubblewrap jail cannot run${this.#owner === undefined ? '' : ` as uid ${this.#owner.uid}`} with root ${config.root}: ${this.#probe.error ?? 'unknown'}${this.#owner === undefined ? '' : ' (every folder above the root must let that user through: o+x)'}`,
        );
      }
    }
  }

  info(): AdapterInfo {
    const probe = this.#probe;
    const failed = probe?.checks.filter((check) => !check.passed) ?? [];
    return {
      kind: 'devhost',
      version: '1',
      trust: 'private',
      isolation:
        probe !== undefined
          ? `namespaces: bubblewrap (user, mount, network, PID, IPC, UTS; the sandbox folder as /, no capabilities, ${this.#owner === undefined ? "the control plane's unprivileged user" : `host uid ${this.#owner.uid}`}), host kernel; measured at start: ${probe.checks.map((check) => `${check.name} ${check.passed ? 'yes' : 'NO'} (${check.seen})`).join('; ')}`
          : 'none: host directories and host processes',
      protocol: adapterProtocolVersion,
      isolationVerified: probe?.verified ?? false,
      limitations: [
        probe !== undefined
          ? "dev mode only: commands share the host's kernel; system folders are the host's, read-only; no network"
          : this.#config.isolation === 'none'
            ? "dev mode only: commands run as host processes with the control plane's user and network, and see the host's files and processes"
            : "dev mode only: bubblewrap (bwrap) is missing here, so commands run as host processes with the control plane's user and network, and see the host's files and processes (apt-get install bubblewrap)",
        ...failed.map((check) => `the jail was measured without: ${check.name} (${check.seen})`),
        'resources are recorded, not applied',
        'no provider TTL backstop: expiry relies on the sweep',
        'the files API does not follow symbolic links',
      ],
    };
  }

  async capabilities(): Promise<Capabilities> {
    return {
      // Root inside the jail's user namespace (exec.root) exists only in a jail: unjailed, commands are the
      // control plane's own host processes. A jail has no network but its own loopback (measured by the
      // probe): that is egress deny, and the only egress policy devhost enforces yet (docs/network.md).
      features:
        this.#probe === undefined
          ? devhostFeatures
          : [
              ...devhostFeatures,
              'exec.root',
              ...(this.#probe.checks.some((check) => check.name === jailNetworkCheck && check.passed)
                ? ['network.egress.deny']
                : []),
            ],
      maxCPU: 0,
      maxMemoryMiB: 0,
      maxDiskGiB: 0,
      // Commands run in the host's own environment: there is one template, and another name is refused
      // at create (placement says why) instead of being ignored.
      templates: [devhostTemplate],
      regions: [],
    };
  }

  async capacity(): Promise<Capacity> {
    return unboundedCapacity();
  }

  async health(): Promise<void> {
    await mkdir(this.#config.root, { recursive: true });
    const info = await stat(this.#config.root);
    if (!info.isDirectory())
      throw adapterErrors.unavailable(`devhost root ${this.#config.root} is not a directory`);
  }

  async create(request: CreateRequest): Promise<Instance> {
    if (!isId('sandbox', request.id)) throw adapterErrors.invalidRequest(`not a sandbox id: ${request.id}`);
    const dir = this.#dir(request.id);
    const existing = await this.#readMeta(request.id);
    if (existing !== undefined) return toInstance(existing);
    // The sandbox user passes through the sandbox's folder to its `fs`, which only it can enter.
    await mkdir(dir, { recursive: true, mode: 0o711 });
    madeHere.add(resolvePath(dir));
    if (request.fromSnapshot !== undefined) {
      // A restore starts from a copy of the snapshot's filesystem.
      await cp(join(this.#snapshotDir(request.fromSnapshot), 'fs'), join(dir, 'fs'), { recursive: true });
    }
    await mkdir(join(dir, 'fs'), { recursive: true, mode: 0o700 });
    if (this.#owner !== undefined) await chownTree(join(dir, 'fs'), this.#owner);
    const meta: Meta = {
      sandboxId: request.id,
      installation: request.installation,
      env: request.env,
      state: 'running',
      createdAt: new Date().toISOString(),
    };
    await writeMeta(dir, meta);
    return toInstance(meta);
  }

  async get(ref: string): Promise<Instance> {
    const meta = await this.#readMeta(ref);
    if (meta === undefined) throw adapterErrors.notFound(ref);
    return toInstance(meta);
  }

  async list(installation: string): Promise<Instance[]> {
    let names: string[];
    try {
      names = await readdir(this.#config.root);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw adapterErrors.unavailable(`cannot read devhost root ${this.#config.root}`, {}, { cause: error });
    }
    const instances: Instance[] = [];
    for (const name of names.filter((n) => isId('sandbox', n))) {
      const meta = await this.#readMeta(name);
      if (meta?.installation === installation) instances.push(toInstance(meta));
    }
    return instances;
  }

  async delete(ref: string): Promise<void> {
    if (!isId('sandbox', ref)) return;
    // A sandbox's processes end with it.
    for (const command of runningCommands.get(ref) ?? []) command.abort();
    runningCommands.delete(ref);
    interactive.endAll(ref);
    await removeTree(this.#dir(ref));
    madeHere.delete(resolvePath(this.#dir(ref)));
  }

  async exec(ref: string, request: ExecRequest, opts?: ExecOptions): Promise<ExecResult> {
    const cap = Math.min(this.#config.outputMaxBytes, opts?.maxOutputBytes ?? Number.POSITIVE_INFINITY);
    const stdout = new CappedBuffer(cap);
    const stderr = new CappedBuffer(cap);
    const result = await this.#run(ref, request, opts, (event) =>
      (event.stream === 'stdout' ? stdout : stderr).push(event.data),
    );
    return {
      exitCode: result.exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
      durationMs: result.durationMs,
      truncated: stdout.truncated || stderr.truncated,
      timedOut: result.timedOut,
    };
  }

  async execStream(ref: string, request: ExecRequest, emit: ExecEmit, opts?: CallOptions): Promise<number> {
    return (await this.#run(ref, request, opts, emit)).exitCode;
  }

  async readFile(ref: string, path: string, opts?: ReadFileOptions): Promise<Uint8Array> {
    return readSandboxFile(await this.#fsRoot(ref), path, opts?.maxBytes ?? defaultReadMaxBytes).catch(
      (error: unknown) => {
        throw fileSystemError(error, path);
      },
    );
  }

  async writeFile(ref: string, path: string, content: Uint8Array): Promise<void> {
    return writeSandboxFile(await this.#fsRoot(ref), path, content, this.#owner).catch((error: unknown) => {
      throw fileSystemError(error, path);
    });
  }

  async listFiles(ref: string, path: string): Promise<FileInfo[]> {
    return listSandboxDirectory(await this.#fsRoot(ref), path);
  }

  async stop(ref: string): Promise<void> {
    await this.#setState(ref, 'running', 'stopped');
    // A stopped sandbox runs nothing: its interactive processes end as its execs would.
    interactive.endAll(ref);
  }

  async startProcess(ref: string, request: ProcessStartRequest): Promise<ProcessInfo> {
    const command = request.shell ? ['/bin/sh', '-c', ...request.argv] : request.argv;
    const env = request.pty === undefined ? request.env : { TERM: 'xterm-256color', ...request.env };
    const launch = await this.#launch(ref, request.cwd, env, helperArgv(request.pty, command), request.user);
    const timeoutSeconds = Math.min(request.timeoutSeconds, devhostMaxTimeoutSeconds);
    const tracked = interactive.start(ref, request, (process) =>
      launchInteractive({ ...launch, timeoutSeconds }, process, (exitCode) =>
        interactive.ended(ref, process, exitCode),
      ),
    );
    return { ...tracked.info };
  }

  async listProcesses(ref: string): Promise<ProcessInfo[]> {
    await this.#fsRoot(ref);
    return interactive.list(ref);
  }

  async attachProcess(
    ref: string,
    pid: number,
    emit: ExecEmit,
    opts?: CallOptions,
  ): Promise<number | undefined> {
    return interactive.get(ref, pid).attach(emit, opts?.signal);
  }

  async readProcessOutput(ref: string, pid: number, maxBytes: number): Promise<ProcessOutput> {
    return interactive.get(ref, pid).read(maxBytes);
  }

  async writeStdin(ref: string, pid: number, data: Uint8Array): Promise<void> {
    interactive.get(ref, pid).write(data);
  }

  async closeStdin(ref: string, pid: number): Promise<void> {
    interactive.get(ref, pid).closeStdin();
  }

  async resizeProcess(ref: string, pid: number, size: TerminalSize): Promise<void> {
    interactive.get(ref, pid).resize(size);
  }

  async signalProcess(ref: string, pid: number, signal: ProcessSignal): Promise<void> {
    interactive.get(ref, pid).signal(signal);
  }

  async start(ref: string): Promise<void> {
    await this.#setState(ref, 'stopped', 'running');
  }

  /**
   * A pause keeps everything: each of the sandbox's processes is stopped where it stands (./freezer.ts)
   * and continued on resume; meanwhile nothing new starts in it (commands are refused: it is not running).
   */
  async pause(ref: string): Promise<void> {
    await this.#setState(ref, 'running', 'paused');
    freezeGroup(ref);
  }

  async resume(ref: string): Promise<void> {
    await this.#setState(ref, 'paused', 'running');
    thawGroup(ref);
  }

  /** A disk snapshot: a copy of the sandbox's filesystem (memory is not something a directory has). */
  async snapshot(ref: string, kind: 'disk' | 'memory', opts?: SnapshotOptions): Promise<SnapshotInfo> {
    if (kind === 'memory') throw adapterErrors.unsupported('memory snapshot', { adapter: 'devhost' });
    if ((await this.#readMeta(ref)) === undefined) throw adapterErrors.notFound(ref);
    // Named after the control plane's id when given: a repeated call finds the copy the first one made.
    const named = opts?.id !== undefined && isId('snapshot', opts.id);
    const snapshotRef = (named ? (opts?.id ?? '') : newId('snapshot')).replace('snp_', 'dsnap_');
    const target = join(this.#snapshotDir(snapshotRef), 'fs');
    const done = await stat(target).then(
      () => true,
      () => false,
    );
    if (!done) {
      // Copied aside, then renamed into place: a copy cut short never passes for a snapshot.
      const partial = `${target}.partial`;
      await rm(partial, { recursive: true, force: true });
      await cp(join(this.#dir(ref), 'fs'), partial, { recursive: true });
      await rename(partial, target);
      madeHere.add(resolvePath(this.#snapshotDir(snapshotRef)));
    }
    return { ref: snapshotRef, kind: 'disk', sizeBytes: await directorySize(target) };
  }

  async deleteSnapshot(snapshotRef: string): Promise<void> {
    if (!snapshotRefPattern.test(snapshotRef)) return;
    await rm(this.#snapshotDir(snapshotRef), { recursive: true, force: true });
    madeHere.delete(resolvePath(this.#snapshotDir(snapshotRef)));
  }

  #snapshotDir(snapshotRef: string): string {
    if (!snapshotRefPattern.test(snapshotRef)) {
      throw adapterErrors.invalidRequest(`not a devhost snapshot: ${snapshotRef}`);
    }
    return join(this.#config.root, snapshotsDir, snapshotRef);
  }

  async #run(ref: string, request: ExecRequest, opts: CallOptions | undefined, onOutput: ExecEmit) {
    const argv = request.command !== undefined ? ['/bin/sh', '-c', request.command] : (request.args ?? []);
    const launch = await this.#launch(ref, request.cwd, request.env ?? {}, argv, request.user);
    const timeoutSeconds = Math.min(
      request.timeoutSeconds ?? devhostDefaultTimeoutSeconds,
      devhostMaxTimeoutSeconds,
    );
    // Registered under the instance: its commands end with it (delete), and with this process.
    const ended = new AbortController();
    const running = runningCommands.get(ref) ?? new Set<AbortController>();
    running.add(ended);
    runningCommands.set(ref, running);
    const signal = opts?.signal === undefined ? ended.signal : AbortSignal.any([opts.signal, ended.signal]);
    return runProcess({
      ...launch,
      shell: false,
      stdin: request.stdin,
      timeoutSeconds,
      signal,
      onOutput,
    })
      .catch((error: unknown) => {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EACCES') {
          throw adapterErrors.invalidRequest(`cannot run ${request.args?.[0] ?? 'the command'}: ${code}`);
        }
        throw error;
      })
      .finally(() => {
        running.delete(ended);
        if (running.size === 0 && runningCommands.get(ref) === running) runningCommands.delete(ref);
      });
  }

  /**
   * How to start `argv` in the running sandbox `ref`: in its jail, the sandbox's folder as `/` and the
   * tenant's variables set inside the jail only; otherwise as a host process in the sandbox's folder.
   */
  async #launch(
    ref: string,
    cwd: string | undefined,
    env: Record<string, string>,
    argv: string[],
    user?: 'root',
  ) {
    const meta = await this.#readMeta(ref);
    if (meta === undefined) throw adapterErrors.notFound(ref);
    if (meta.state !== 'running')
      throw adapterErrors.invalidState(`sandbox ${ref} is ${meta.state}`, { state: meta.state });
    const root = join(this.#dir(ref), 'fs');
    const cwdNames = await ensureSandboxDirectory(root, cwd ?? '/', this.#owner).catch((error: unknown) => {
      throw fileSystemError(error, cwd ?? '/');
    });
    const jail =
      this.#probe === undefined
        ? undefined
        : jailCommand(
            root,
            `/${cwdNames.join('/')}`,
            { PATH: jailPath, HOME: '/', SANDBOX_ROOT: '/', ...meta.env, ...env },
            argv,
            user === 'root' ? 0 : jailUid,
          );
    return {
      argv: jail?.argv ?? argv,
      fd3: jail?.options,
      group: ref,
      user: this.#owner,
      cwd: jail === undefined ? join(root, ...cwdNames) : '/',
      env:
        jail === undefined
          ? {
              PATH: process.env.PATH ?? '/usr/bin:/bin',
              HOME: root,
              SANDBOX_ROOT: root,
              ...meta.env,
              ...env,
            }
          : launcherEnv,
    };
  }

  /** The host folder that is the sandbox's `/` (the sandbox must exist). */
  async #fsRoot(ref: string): Promise<string> {
    if ((await this.#readMeta(ref)) === undefined) throw adapterErrors.notFound(ref);
    return join(this.#dir(ref), 'fs');
  }

  async #setState(ref: string, from: Meta['state'], to: Meta['state']): Promise<void> {
    const meta = await this.#readMeta(ref);
    if (meta === undefined) throw adapterErrors.notFound(ref);
    if (meta.state !== from)
      throw adapterErrors.invalidState(`sandbox ${ref} is ${meta.state}`, { state: meta.state });
    await writeMeta(this.#dir(ref), { ...meta, state: to });
  }

  #dir(ref: string): string {
    if (!isId('sandbox', ref)) throw adapterErrors.notFound(ref);
    return join(this.#config.root, ref);
  }

  async #readMeta(ref: string): Promise<Meta | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.#dir(ref), 'meta.json'), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const parsed = safeParseJsonText(metaSchema, text);
    if (!parsed.success) throw adapterErrors.unavailable(`devhost metadata of ${ref} is corrupt`);
    return parsed.data;
  }
}

/**
 * Removes a sandbox's folder whatever its commands did to it: a folder a tenant made unreadable
 * (`chmod 000`) stops an unprivileged control plane's rm, so folders are opened up (links never followed)
 * and the rm tried again.
 */
async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw error;
    await openUp(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await openUp(join(dir, entry.name));
  }
}

/** Hands every file and folder under `dir` (a restored copy) to the sandbox user; links are not followed. */
async function chownTree(dir: string, owner: JailUser): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await lchown(join(entry.parentPath, entry.name), owner.uid, owner.gid);
  }
}

async function directorySize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

function toInstance(meta: Meta): Instance {
  return { ref: meta.sandboxId, sandboxId: meta.sandboxId, state: meta.state };
}
