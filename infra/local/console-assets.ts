import type { ConsoleAssets } from '../../lib/console/assets.ts';
import { once } from '../../lib/once.ts';
import { buildConsole } from '../console-build.ts';

/**
 * The local runtime's console: built in memory from console/src on the first request for it (a start,
 * and every test's runtime, pays nothing until then), once per process: the build depends on the
 * sources only, so every runtime and container in the process serves the same files. Edits to the
 * console's sources show after a restart of `npm start`.
 */
const built = once(buildConsole);

export const localConsoleAssets: ConsoleAssets = {
  async read(name) {
    return (await built()).get(name);
  },
};
