/**
 * Lambda bundles (npm run bench): each function's minified bundle size, and its module import time in a
 * fresh Node process as a ratio to an empty handler's (the cold-start cost the code itself adds).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { percentile, printTable } from './stats.ts';

const functions = ['api', 'provision', 'terminate', 'sweep', 'reconcile'];
const out = mkdtempSync(join(tmpdir(), 'differently-bundles-'));
const banner = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

async function bundle(name: string, entry: string): Promise<string> {
  const outfile = join(out, name, 'index.mjs');
  // The same settings as the CDK app's house construct (infra/cdk/constructs/control-plane-function.ts).
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    mainFields: ['module', 'main'],
    banner: { js: banner },
    logLevel: 'silent',
  });
  return outfile;
}

/** Median wall time of importing the module in a fresh process, over several runs. */
function importMs(file: string, runs = 7): number {
  const script = `const t=performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now()-t));`;
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    samples.push(
      Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })),
    );
  }
  return percentile(samples, 50);
}

const emptyEntry = join(out, 'empty.ts');
writeFileSync(emptyEntry, 'export const handler = async () => ({});\n');
const empty = importMs(await bundle('empty', emptyEntry));
const rows: string[][] = [];
for (const name of functions) {
  const file = await bundle(name, join(import.meta.dirname, '..', 'functions', `${name}.ts`));
  const ms = importMs(file);
  rows.push([name, String(statSync(file).size), ms.toFixed(1), (ms / empty).toFixed(1)]);
}
printTable(
  `Function bundles (minified ESM) and module import time, empty handler = ${empty.toFixed(1)} ms`,
  ['function', 'bytes', 'import ms (p50 of 7)', 'ratio to empty'],
  rows,
);
