import { constants } from 'node:fs';
import { type FileHandle, lchown, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { normalize } from 'node:path';
import { adapterErrors, fileSystemError } from '../../lib/adapter/errors.ts';
import type { FileInfo } from '../../lib/adapter/port.ts';
import { errors } from '../../lib/errors.ts';
import type { JailUser } from './jail.ts';

/**
 * The files API's way into a sandbox's folder, in one step that cannot be led out of it: every component
 * of a path is opened relative to the directory before it (through /proc/self/fd/N, Node's openat) with
 * O_NOFOLLOW, so a symbolic link anywhere in the path, made by a command racing the call or not, is
 * refused rather than followed. What is read or written is the file that was opened, never a name looked
 * up again later.
 */

const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Linux's limit on one name in a path. */
const maxNameBytes = 255;

function at(dir: FileHandle, name: string): string {
  return `/proc/self/fd/${dir.fd}/${name}`;
}

/** The names of an absolute sandbox path (`..` cannot climb above `/`, as inside the jail). */
export function pathNames(path: string): string[] {
  if (!path.startsWith('/') || path.includes('\0')) {
    throw adapterErrors.invalidRequest(`path must be absolute inside the sandbox: ${JSON.stringify(path)}`);
  }
  const names = normalize(path)
    .split('/')
    .filter((name) => name !== '' && name !== '.' && name !== '..');
  for (const name of names) {
    if (Buffer.byteLength(name) > maxNameBytes) {
      throw adapterErrors.invalidRequest(`a name in the path is longer than ${maxNameBytes} bytes`, {
        field: 'path',
      });
    }
  }
  return names;
}

/** Why a component could not be opened, in the path's own words. */
async function refusal(error: unknown, dir: FileHandle, name: string, path: string): Promise<Error> {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'ENOTDIR') {
    const info = await lstat(at(dir, name)).catch(() => undefined);
    if (info?.isSymbolicLink()) {
      return adapterErrors.invalidRequest(
        `${path} passes through a symbolic link (${name}); the files API does not follow links`,
        { path },
      );
    }
  }
  return fileSystemError(error, path);
}

/**
 * The directory at `names` under the sandbox's root (`root`, a host folder the control plane made), opened;
 * with `create`, missing directories are made (owned by `owner` when given). The caller closes it.
 */
export async function openDirectory(
  root: string,
  names: readonly string[],
  path: string,
  create: { owner: JailUser | undefined } | undefined,
): Promise<FileHandle> {
  let dir = await open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    for (const name of names) {
      let next: FileHandle;
      try {
        next = await open(at(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || create === undefined) {
          throw await refusal(error, dir, name, path);
        }
        // mkdir never follows a link at the name it makes; one that appears meanwhile fails the open below.
        await mkdir(at(dir, name), { mode: 0o755 }).catch((made: NodeJS.ErrnoException) => {
          if (made.code !== 'EEXIST') throw fileSystemError(made, path);
        });
        if (create.owner !== undefined) await lchown(at(dir, name), create.owner.uid, create.owner.gid);
        next = await open(at(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch(async (error) => {
          throw await refusal(error, dir, name, path);
        });
      }
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close();
    throw error;
  }
}

/** The bytes of the file at `path`, refused before any is read when it holds more than `maxBytes`. */
export async function readSandboxFile(root: string, path: string, maxBytes: number): Promise<Uint8Array> {
  const names = pathNames(path);
  const name = names.pop();
  if (name === undefined) throw fileSystemError({ code: 'EISDIR' }, path);
  const dir = await openDirectory(root, names, path, undefined);
  let file: FileHandle;
  try {
    // O_NONBLOCK: a FIFO a command left there cannot hold the call open waiting for a writer.
    file = await open(at(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(async (error) => {
      throw await refusal(error, dir, name, path);
    });
  } finally {
    await dir.close();
  }
  try {
    const info = await file.stat();
    if (info.isDirectory()) throw fileSystemError({ code: 'EISDIR' }, path);
    if (!info.isFile()) throw adapterErrors.invalidRequest(`${path} is not a regular file`, { path });
    if (info.size > maxBytes) throw errors.payloadTooLarge(maxBytes);
    // Read at most one byte past the limit: a file a command grows meanwhile is refused, never buffered.
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw errors.payloadTooLarge(maxBytes);
      if (length === buffer.length) break;
    }
    return buffer.subarray(0, length);
  } finally {
    await file.close();
  }
}

/** Writes `content` at `path`, making missing directories; every file and folder made is `owner`'s. */
export async function writeSandboxFile(
  root: string,
  path: string,
  content: Uint8Array,
  owner: JailUser | undefined,
): Promise<void> {
  const names = pathNames(path);
  const name = names.pop();
  if (name === undefined) throw fileSystemError({ code: 'EISDIR' }, path);
  const dir = await openDirectory(root, names, path, { owner });
  let file: FileHandle;
  try {
    file = await open(at(dir, name), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644).catch(
      async (error) => {
        throw await refusal(error, dir, name, path);
      },
    );
  } finally {
    await dir.close();
  }
  try {
    const info = await file.stat();
    if (!info.isFile()) throw adapterErrors.invalidRequest(`${path} is not a regular file`, { path });
    if (owner !== undefined) await file.chown(owner.uid, owner.gid);
    await file.truncate(0);
    await file.write(content, 0, content.length, 0);
  } finally {
    await file.close();
  }
}

/** The entries of the directory at `path`, as they are (a link is listed, never followed). */
export async function listSandboxDirectory(root: string, path: string): Promise<FileInfo[]> {
  const dir = await openDirectory(root, pathNames(path), path, undefined);
  try {
    const entries = await readdir(`/proc/self/fd/${dir.fd}`, { withFileTypes: true });
    const base = path.endsWith('/') ? path : `${path}/`;
    return await Promise.all(
      entries.map(async (entry) => {
        const info = await lstat(at(dir, entry.name));
        return {
          name: entry.name,
          path: `${base}${entry.name}`,
          isDir: info.isDirectory(),
          size: info.isDirectory() ? 0 : info.size,
          modifiedAt: info.mtime.toISOString(),
        };
      }),
    );
  } catch (error) {
    throw fileSystemError(error, path);
  } finally {
    await dir.close();
  }
}

/** Makes the directory at `path` (and those above it) and returns its host path (the jail's cwd). */
export async function ensureSandboxDirectory(
  root: string,
  path: string,
  owner: JailUser | undefined,
): Promise<string[]> {
  const names = pathNames(path);
  await (await openDirectory(root, names, path, { owner })).close();
  return names;
}
