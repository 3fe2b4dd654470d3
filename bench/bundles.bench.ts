/**
 * Lambda bundles (npm run bench): each function's minified bundle and its module import time in a fresh
 * Node process, side by side with a reference built and measured in the same run: a bundle that imports
 * and constructs only the AWS SDK clients the functions use (functions/wiring.ts: DynamoDB with its
 * document client, SQS, EventBridge, Secrets Manager). Goals (issue #22): size and import time <= 1.3 x
 * the reference's.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { bundleEntryName, functionBundleOptions, staticClosure } from '../infra/function-bundle.ts';
import { percentile, printTable } from './stats.ts';

const functions = [
  'api',
  'provision',
  'terminate',
  'operations',
  'webhooks',
  'sweep',
  'reconcile',
  'pool-refresh',
];
const out = mkdtempSync(join(tmpdir(), 'differently-bundles-'));
const runs = Number(process.env.BENCH_IMPORT_RUNS ?? 9);

const root = join(import.meta.dirname, '..');

interface Bundle {
  /** The file Lambda imports. */
  file: string;
  /** What a cold start loads: the entry and the chunks it imports statically. */
  bytes: number;
  /** Every output file, the chunks only an import() reaches included. */
  allBytes: number;
  files: number;
}

/** A function's bundle as the CDK app builds it (infra/function-bundle.ts). */
async function functionBundle(name: string): Promise<Bundle> {
  const outdir = join(out, name);
  const { metafile } = await build(functionBundleOptions(join(root, 'functions', `${name}.ts`), outdir));
  const loaded = staticClosure(metafile, outdir);
  const outputs = Object.entries(metafile.outputs).filter(([path]) => path.endsWith('.mjs'));
  return {
    file: join(outdir, `${bundleEntryName}.mjs`),
    bytes: loaded.bytes,
    allBytes: outputs.reduce((sum, [, output]) => sum + output.bytes, 0),
    files: loaded.files.length,
  };
}

/** The reference: source text resolved from the project, in one file, with the functions' settings. */
async function referenceBundle(source: string): Promise<Bundle> {
  const outdir = join(out, 'sdk-clients');
  const { entryPoints: _entry, splitting: _splitting, ...settings } = functionBundleOptions('', outdir);
  await build({ ...settings, stdin: { contents: source, resolveDir: root, loader: 'ts' } });
  const file = join(outdir, 'stdin.mjs');
  const bytes = statSync(file).size;
  return { file, bytes, allBytes: bytes, files: 1 };
}

/** Wall time of importing the module in a fresh process (what a Lambda cold start pays before any work). */
function importMs(file: string): number {
  const script = `const t=performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now()-t));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
}

const reference = await referenceBundle(
  [
    "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    "import { EventBridgeClient } from '@aws-sdk/client-eventbridge';",
    "import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';",
    "import { SQSClient } from '@aws-sdk/client-sqs';",
    "import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
    'export const clients = [DynamoDBDocumentClient.from(new DynamoDBClient({})), new SQSClient({}), new EventBridgeClient({}), new SecretsManagerClient({})];',
    'export const handler = async () => ({});',
  ].join('\n'),
);

const bundles = new Map<string, Bundle>();
for (const name of functions) bundles.set(name, await functionBundle(name));

// Samples interleaved (reference, then each function, repeated), so load and drift fall on all alike.
const samples = new Map<string, number[]>([
  ['reference', []],
  ...functions.map((f) => [f, []] as [string, number[]]),
]);
for (let run = 0; run < runs; run++) {
  samples.get('reference')?.push(importMs(reference.file));
  for (const [name, bundle] of bundles) samples.get(name)?.push(importMs(bundle.file));
}
const referenceBytes = reference.bytes;
const referenceMs = percentile(samples.get('reference') ?? [], 50);
const rows: string[][] = [
  [
    'reference: the SDK clients alone',
    '1',
    String(referenceBytes),
    '1.00',
    String(referenceBytes),
    referenceMs.toFixed(1),
    '1.00',
  ],
];
const worst = { size: 0, time: 0 };
for (const [name, bundle] of bundles) {
  const bytes = bundle.bytes;
  const ms = percentile(samples.get(name) ?? [], 50);
  worst.size = Math.max(worst.size, bytes / referenceBytes);
  worst.time = Math.max(worst.time, ms / referenceMs);
  rows.push([
    name,
    String(bundle.files),
    String(bytes),
    (bytes / referenceBytes).toFixed(2),
    String(bundle.allBytes),
    ms.toFixed(1),
    (ms / referenceMs).toFixed(2),
  ]);
}
printTable(
  `Function bundles (minified ESM, split) and module import time in a fresh process (p50 of ${runs}): what a cold start loads (the entry and its static chunks) beside every file`,
  ['bundle', 'files loaded', 'bytes loaded', 'x reference', 'bytes in all', 'import ms', 'x reference'],
  rows,
);
console.log(
  `largest ratios: size ${worst.size.toFixed(2)} (goal <= 1.3), import ${worst.time.toFixed(2)} (goal <= 1.3)\n`,
);
rmSync(out, { recursive: true, force: true });
