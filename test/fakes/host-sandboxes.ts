import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { runProcess } from '../../adapters/devhost/run-process.ts';
import type { ExecEvent } from '../../lib/adapter/port.ts';

export interface HostRun {
  command: string;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  stdin?: string | undefined;
  timeoutMs?: number | undefined;
  onOutput?: (event: ExecEvent) => void;
  /** Run as root even where the sandbox has a guest account (a provider's `linuxUser: root`). */
  asRoot?: boolean;
}

export interface HostSandboxesOptions {
  /**
   * The image's own account that commands run as by default (Freestyle's uid-1000 user). Only a root host
   * can switch users: elsewhere commands run as the host user and this has no effect.
   */
  guestUser?: { uid: number; gid: number };
}

/**
 * What runs "inside" a fake provider's sandboxes: a host directory per sandbox (its `/`), commands as
 * host processes there. Enough for the provider fakes to answer exec and files the way the real
 * services do, so the adapters' parsing of real output is what the tests exercise.
 */
export class HostSandboxes {
  readonly #root: Promise<string>;
  /** Set only where it can take effect: on a root host. */
  readonly #guestUser: { uid: number; gid: number } | undefined;

  constructor(options: HostSandboxesOptions = {}) {
    this.#guestUser = process.getuid?.() === 0 ? options.guestUser : undefined;
    this.#root = mkdtemp(join(tmpdir(), 'fake-provider-')).then(async (root) => {
      // The guest account must be able to walk to its sandbox.
      if (this.#guestUser !== undefined) await chmod(root, 0o711);
      return root;
    });
  }

  /** True where commands really run as the guest account (a root host with `guestUser`). */
  get switchesUser(): boolean {
    return this.#guestUser !== undefined;
  }

  async dir(id: string): Promise<string> {
    const dir = join(await this.#root, id.replace(/[^A-Za-z0-9_-]/g, '_'));
    await mkdir(join(dir, 'work'), { recursive: true });
    await mkdir(join(dir, 'tmp'), { recursive: true });
    if (this.#guestUser !== undefined) {
      // The guest's own folders are its account's, as in an image; the rest stays root's.
      const { uid, gid } = this.#guestUser;
      for (const folder of [dir, join(dir, 'work'), join(dir, 'tmp')]) await chown(folder, uid, gid);
      await chmod(join(dir, 'tmp'), 0o1777);
    }
    return dir;
  }

  /** A guest path under the sandbox's root; `..` cannot climb out. */
  async path(id: string, guest: string): Promise<string> {
    return join(await this.dir(id), normalize(`/${guest}`));
  }

  async run(
    id: string,
    run: HostRun,
  ): Promise<{ stdout: string; stderr: string; exitCode: number; timedOut: boolean }> {
    const root = await this.dir(id);
    const cwd = run.cwd === undefined ? root : await this.path(id, run.cwd);
    await mkdir(cwd, { recursive: true });
    let stdout = '';
    let stderr = '';
    const command = hostCommand(root, run.command);
    const result = await runProcess({
      ...(this.#guestUser !== undefined && run.asRoot !== true && { user: this.#guestUser }),
      argv: [command],
      shell: true,
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, ...run.env },
      stdin: run.stdin,
      timeoutSeconds: (run.timeoutMs ?? 600_000) / 1000,
      onOutput: (event) => {
        if (event.stream === 'stdout') stdout += event.data;
        else stderr += event.data;
        run.onOutput?.(event);
      },
    });
    return { stdout, stderr, exitCode: result.exitCode, timedOut: result.timedOut };
  }

  /**
   * A command left running with its stdin a pipe the caller holds (a provider's session shell), in a
   * process group of its own so that `kill(-pid)` ends everything it started.
   */
  async spawn(id: string, command: string, env: Record<string, string>): Promise<ChildProcess> {
    const root = await this.dir(id);
    return spawn('/bin/sh', ['-c', hostCommand(root, command)], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      ...(this.#guestUser !== undefined && { uid: this.#guestUser.uid, gid: this.#guestUser.gid }),
    });
  }

  /** Written by the host (root where the host is root), with `mode` if given. */
  async write(id: string, guest: string, content: Uint8Array, mode?: number): Promise<void> {
    const path = await this.path(id, guest);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    if (mode !== undefined) await chmod(path, mode);
  }

  /** The permission bits of a guest file, or undefined when there is none. */
  async modeOf(id: string, guest: string): Promise<number | undefined> {
    try {
      return (await stat(await this.path(id, guest))).mode & 0o7777;
    } catch {
      return undefined;
    }
  }

  /** The bytes, or undefined when there is no such file. */
  async read(id: string, guest: string): Promise<Buffer | undefined> {
    try {
      return await readFile(await this.path(id, guest));
    } catch {
      return undefined;
    }
  }

  async list(
    id: string,
    guest: string,
  ): Promise<{ name: string; isDir: boolean; size: number; modified: string }[] | undefined> {
    const path = await this.path(id, guest);
    try {
      const entries = await readdir(path, { withFileTypes: true });
      return Promise.all(
        entries.map(async (entry) => {
          const info = await stat(join(path, entry.name));
          return {
            name: entry.name,
            isDir: entry.isDirectory(),
            size: info.size,
            modified: info.mtime.toISOString(),
          };
        }),
      );
    } catch {
      return undefined;
    }
  }

  async copy(from: string, to: string): Promise<void> {
    await cp(await this.dir(from), await this.dir(to), { recursive: true });
  }

  async remove(id: string): Promise<void> {
    await rm(await this.dir(id), { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await rm(await this.#root, { recursive: true, force: true });
  }
}

/**
 * Commands run on the host: guest paths the adapters write into command text (a staged stdin file under
 * /tmp, files under /work) are moved under the sandbox's root, as a container's `/` would be.
 */
function hostCommand(root: string, command: string): string {
  return command.replace(/(^|[\s<>'"=(;|&])\/(tmp|work|etc\/differently)(?=[/\s'";|&)]|$)/g, `$1${root}/$2`);
}
