import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { BuildOptions, Metafile, OnResolveArgs, Plugin } from 'esbuild';

/** Where the bundles' metafile paths start from, whatever the caller's working directory. */
export const bundleRoot = join(import.meta.dirname, '..');

/** The namespace of the libraries' copy of zod (librariesOwnZod). */
const librariesZod = 'libraries-zod';
/** Marks the plugin's own resolve calls, so that it does not answer them itself. */
const resolving = Symbol('libraries-own-zod');

/**
 * zod as the bundled libraries import it (the MCP SDK, zod-to-json-schema: both reached only through an
 * `import()`) is a copy of its own. esbuild tree-shakes a module once for the whole build, so a file that
 * both the cold start and a lazy chunk use carries what either needs: the MCP SDK's classic API kept
 * about 31 KB of zod's core (schema kinds, the JSON Schema converter), and 13.6 M instructions of it run,
 * in the api's cold start. Apart, the cold start keeps only what the mini API of lib/zod.ts uses, and the
 * MCP chunk brings the rest when the first MCP request imports it. The two copies work together by zod's
 * design: its config and its registry of descriptions live on globalThis (`__zod_globalConfig`,
 * `__zod_globalRegistry`), and a schema carries its own parser (`_zod.run`), so the MCP SDK's zod reads
 * and runs the schemas the routes declare with lib/zod.ts.
 */
export const librariesOwnZod: Plugin = {
  name: 'libraries-own-zod',
  setup(build) {
    const inCopy = async (args: OnResolveArgs) => {
      const found = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: resolving,
      });
      if (found.errors.length > 0) return { errors: found.errors };
      // A path relative to the project: the same in every checkout, so the bundle's hash is too.
      return {
        path: relative(bundleRoot, found.path),
        namespace: librariesZod,
        pluginData: found.path,
        sideEffects: false,
      };
    };
    build.onResolve({ filter: /^zod(\/.*)?$/ }, (args) => {
      if (args.pluginData === resolving) return undefined;
      const library =
        args.importer.includes('/node_modules/') && !args.importer.includes('/node_modules/zod/');
      return args.namespace === librariesZod || library ? inCopy(args) : undefined;
    });
    // zod's own relative imports stay within the copy.
    build.onResolve({ filter: /^\./, namespace: librariesZod }, inCopy);
    build.onLoad({ filter: /.*/, namespace: librariesZod }, async (args) => {
      const file = String(args.pluginData);
      return { contents: await readFile(file, 'utf8'), loader: 'js', resolveDir: dirname(file) };
    });
  },
};

/**
 * The Node options a deployed function runs with: none. Not `--enable-source-maps`: with it Node reads
 * and measures the source map of every file it loads, at import (the api's cold start cost 692 M
 * instructions with it, 553 M without, the bench's count); a logged stack is mapped offline instead
 * (`npm run stack-trace`). The bundle bench imports the functions with these options.
 */
export const functionNodeOptions: readonly string[] = [];

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
    // Maps beside the files, for `npm run stack-trace` (infra/bundle-stack-trace.ts), never read by a
    // function: see functionNodeOptions. The sources' text stays out (the repository has it): a third of
    // the size.
    sourcemap: true,
    sourcesContent: false,
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
    plugins: [librariesOwnZod],
  };
}

/**
 * The same build, synchronously, for the CDK app's local bundling (its `tryBundle` is synchronous, and
 * esbuild runs plugins only in its asynchronous build): in a child Node process (infra/build-function.ts).
 */
export function buildFunctionSync(entryFile: string, outdir: string): void {
  execFileSync(process.execPath, [join(import.meta.dirname, 'build-function.ts'), entryFile, outdir], {
    stdio: 'inherit',
  });
}

/** The entries under functions/ bundled as Lambda functions: the API's two, then the workers. */
export const functionEntries = [
  'api',
  'api-stream',
  'provision',
  'terminate',
  'operations',
  'webhooks',
  'sweep',
  'reconcile',
  'pool-refresh',
] as const;

/**
 * The functions whose bundle carries the web console's files: the buffered API function, where API
 * Gateway's {proxy+} sends /console (the streaming one serves only its streamed routes).
 */
export const consoleServingEntries = ['api'] as const;

/** The functions that serve no HTTP: queue workers and schedules. */
export const workerEntries = functionEntries.filter((entry) => entry !== 'api' && entry !== 'api-stream');

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
