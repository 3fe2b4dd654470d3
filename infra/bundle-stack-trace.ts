import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import * as z from '../lib/zod.ts';

/**
 * Deployed functions run without `--enable-source-maps` (docs/performance.md: Node reads every loaded
 * file's source map at import, about a fifth of a cold start), so a logged stack names places in the
 * minified bundle: `file:///var/task/chunks/chunk-X.mjs:3:12345`. The bundle keeps its source maps beside
 * its files; this maps such places back to the sources, offline, with Node's own source map reader.
 */

/**
 * A place in a bundle file as a stack trace prints it: [file:///var/task/]<file>.mjs:<line>:<column>
 * (Lambda unpacks a function's code at /var/task).
 */
const bundlePlace = /(?:file:\/\/)?\/var\/task\/([\w./-]+\.mjs):(\d+):(\d+)/g;

/** The map's source path as the project names it: the build wrote it relative to its output folder. */
function projectPath(source: string): string {
  return source.replace(/^(\.\.\/)+/, '');
}

/** Source map v3, as esbuild writes it (the original sources' text left out). */
const sourceMapSchema = z.looseObject({
  version: z.literal(3),
  sources: z.array(z.string()),
  names: z.array(z.string()),
  mappings: z.string(),
});

function loadMap(bundleDir: string, file: string): SourceMap | undefined {
  const mapFile = join(bundleDir, `${file}.map`);
  if (!existsSync(mapFile)) return undefined;
  const payload = sourceMapSchema.parse(JSON.parse(readFileSync(mapFile, 'utf8')));
  return new SourceMap({ file: '', sourceRoot: '', sourcesContent: [], ...payload });
}

/**
 * The text with every place in the bundle at `bundleDir` (a function's unpacked code, or its asset folder
 * in cdk.out) replaced by `<source>:<line>:<column>`; a place the maps do not cover is left as it was.
 */
export function resolveBundleStackTrace(text: string, bundleDir: string): string {
  const maps = new Map<string, SourceMap | undefined>();
  return text.replace(bundlePlace, (place, file: string, line: string, column: string) => {
    if (!maps.has(file)) maps.set(file, loadMap(bundleDir, file));
    const origin = maps.get(file)?.findOrigin(Number(line), Number(column));
    if (origin === undefined || !('fileName' in origin)) return place;
    // The map's name at a place is the identifier written there (a callee), not the enclosing function's:
    // the source line says which function it is.
    return `${projectPath(origin.fileName)}:${origin.lineNumber}:${origin.columnNumber}`;
  });
}
