import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import type { ConsoleAssets } from '../lib/console/assets.ts';

/**
 * The web console's built files in a folder: `console/` beside the api function's bundle (written by
 * infra/build-function.ts). Read on each request: a file is small, and the page's nonce is per response.
 */
export function directoryConsoleAssets(folder: string): ConsoleAssets {
  return {
    async read(name) {
      const path = normalize(join(folder, name));
      if (!path.startsWith(`${folder}/`)) return undefined;
      try {
        return await readFile(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
  };
}

/**
 * Where a Lambda container finds the console: its task root (the bundle's folder), which Lambda and
 * `sam local` set; elsewhere, beside the loaded entry file.
 */
export function bundledConsoleAssets(): ConsoleAssets {
  return directoryConsoleAssets(join(process.env.LAMBDA_TASK_ROOT ?? import.meta.dirname, 'console'));
}
