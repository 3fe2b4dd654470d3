/**
 * Bundles one function as infra/function-bundle.ts says: `node infra/build-function.ts <entry> <outdir>`.
 * The CDK app's local bundling runs it (buildFunctionSync), since esbuild's synchronous build runs no
 * plugins. Exits non-zero, with esbuild's messages, when the build fails. The function that serves the
 * web console gets the console's files beside its bundle, in `console/` (functions/console-assets.ts).
 */
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import { writeConsole } from './console-build.ts';
import { consoleServingEntries, functionBundleOptions } from './function-bundle.ts';

const [entry, outdir] = process.argv.slice(2);
if (entry === undefined || outdir === undefined) {
  console.error('usage: node infra/build-function.ts <entry file> <output folder>');
  process.exit(2);
}
await build(functionBundleOptions(entry, outdir));
if ((consoleServingEntries as readonly string[]).includes(basename(entry, '.ts')))
  await writeConsole(join(outdir, 'console'));
