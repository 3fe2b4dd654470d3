import { join, relative } from 'node:path';

/** Where the bundles' metafile paths start from, whatever the caller's working directory. */
export const bundleRoot = join(import.meta.dirname, '..');

import type { BuildOptions, Metafile } from 'esbuild';

/**
 * How every Lambda function is bundled, for the CDK app's house construct
 * (infra/cdk/constructs/control-plane-function.ts) and the bundle benchmark alike: minified ESM for
 * nodejs24.x, split into chunks. The entry (`index.mjs`, the handler file) statically imports only what
 * every invocation runs; what one import() reaches (the MCP SDK, an adapter, a backend client) is a chunk
 * of its own, loaded and compiled the first time it is used. A cold start compiles the entry's static
 * closure, not the whole function.
 */
export function functionBundleOptions(entryFile: string, outdir: string): BuildOptions & { metafile: true } {
  return {
    entryPoints: { [bundleEntryName]: entryFile },
    outdir,
    absWorkingDir: bundleRoot,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    sourcemap: true,
    // Lambda takes `index.mjs` as ESM without a package.json beside it.
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    mainFields: ['module', 'main'],
    // The AWS SDK is bundled too (Lambda's copy is left alone): functions run the exact client versions
    // the tests ran, and an invocation outside Lambda (SAM, the sam-like test) finds them in the bundle.
    external: [],
    // Some dependencies are CommonJS and call require(): every output file gets one of its own.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    metafile: true,
    logLevel: 'error',
  };
}

/** The entry's file name, without extension: the handler setting is `index.<export>`. */
export const bundleEntryName = 'index';

/**
 * The output files a cold start loads before the handler runs: the entry and every chunk it imports
 * statically, transitively (paths as the metafile names them, relative to `bundleRoot`).
 */
export function staticClosure(metafile: Metafile, outdir: string): { files: string[]; bytes: number } {
  const entry = relative(bundleRoot, join(outdir, `${bundleEntryName}.mjs`));
  const seen = new Set<string>();
  const pending = [entry];
  let bytes = 0;
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    const output = metafile.outputs[file];
    if (output === undefined || seen.has(file)) continue;
    seen.add(file);
    bytes += output.bytes;
    for (const imported of output.imports)
      if (imported.kind === 'import-statement' && !imported.external) pending.push(imported.path);
  }
  if (seen.size === 0) throw new Error(`the bundle has no entry ${entry}`);
  return { files: [...seen], bytes };
}
