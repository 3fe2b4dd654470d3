import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { type BuildOptions, build } from 'esbuild';
import { styleNoncePlaceholder } from '../lib/console/assets.ts';
import { bundleRoot } from './function-bundle.ts';

/**
 * The web console (console/src, docs/console.md), bundled by the esbuild that bundles the functions: one
 * script and one stylesheet under assets/, named by their content's hash, and the page that loads them.
 * Everything comes from npm at build time (Preact, uPlot, xterm.js): the page loads nothing from any
 * other origin.
 */
export function consoleBuildOptions(): BuildOptions & { metafile: true; write: false } {
  return {
    entryPoints: { app: join(bundleRoot, 'console/src/main.tsx') },
    outdir: join(bundleRoot, 'console-build'),
    absWorkingDir: bundleRoot,
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: ['chrome110', 'firefox115', 'safari16'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: 'assets/[name]-[hash]',
    assetNames: 'assets/[name]-[hash]',
    loader: { '.woff2': 'file', '.svg': 'file' },
    legalComments: 'linked',
    metafile: true,
    write: false,
    logLevel: 'error',
  };
}

/** The page: its script and stylesheet by their built names; the nonce placeholder each response fills. */
function page(script: string, stylesheet: string | undefined): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<meta name="style-nonce" content="${styleNoncePlaceholder}">
<title>Differently console</title>
${stylesheet === undefined ? '' : `<link rel="stylesheet" href="${stylesheet}">\n`}<script type="module" src="${script}"></script>
</head>
<body>
<div id="app"><noscript>The Differently console needs JavaScript.</noscript></div>
</body>
</html>
`;
}

/** The console's files in memory, by name relative to the build (`index.html`, `assets/...`). */
export async function buildConsole(): Promise<Map<string, Uint8Array>> {
  const options = consoleBuildOptions();
  const result = await build(options);
  const outdir = options.outdir as string;
  const files = new Map<string, Uint8Array>();
  for (const file of result.outputFiles) files.set(relative(outdir, file.path), file.contents);
  const names = [...files.keys()];
  const script = names.find((name) => /^assets\/app-[^/]+\.js$/.test(name));
  if (script === undefined) throw new Error('the console build made no script');
  const stylesheet = names.find((name) => /^assets\/app-[^/]+\.css$/.test(name));
  files.set('index.html', new TextEncoder().encode(page(script, stylesheet)));
  return files;
}

/** The console's files written into `folder` (the api function's bundle has them in `console/`). */
export async function writeConsole(folder: string): Promise<void> {
  for (const [name, contents] of await buildConsole()) {
    const path = join(folder, name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, contents);
  }
}
