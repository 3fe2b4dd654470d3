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
const banner = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";
const runs = Number(process.env.BENCH_IMPORT_RUNS ?? 9);

const root = join(import.meta.dirname, '..');

/** A bundle of a function's entry file, or of source text resolved from the project (the reference). */
async function bundle(name: string, entry: { file: string } | { source: string }): Promise<string> {
  const outfile = join(out, name, 'index.mjs');
  // The same settings as the CDK app's house construct (infra/cdk/constructs/control-plane-function.ts).
  await build({
    ...('file' in entry
      ? { entryPoints: [entry.file] }
      : { stdin: { contents: entry.source, resolveDir: root, loader: 'ts' as const } }),
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

/** Wall time of importing the module in a fresh process (what a Lambda cold start pays before any work). */
function importMs(file: string): number {
  const script = `const t=performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now()-t));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
}

const reference = await bundle('sdk-clients', {
  source: [
    "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    "import { EventBridgeClient } from '@aws-sdk/client-eventbridge';",
    "import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';",
    "import { SQSClient } from '@aws-sdk/client-sqs';",
    "import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';",
    'export const clients = [DynamoDBDocumentClient.from(new DynamoDBClient({})), new SQSClient({}), new EventBridgeClient({}), new SecretsManagerClient({})];',
    'export const handler = async () => ({});',
  ].join('\n'),
});

const files = new Map<string, string>();
for (const name of functions) {
  files.set(name, await bundle(name, { file: join(root, 'functions', `${name}.ts`) }));
}

// Samples interleaved (reference, then each function, repeated), so load and drift fall on all alike.
const samples = new Map<string, number[]>([
  ['reference', []],
  ...functions.map((f) => [f, []] as [string, number[]]),
]);
for (let run = 0; run < runs; run++) {
  samples.get('reference')?.push(importMs(reference));
  for (const [name, file] of files) samples.get(name)?.push(importMs(file));
}
const referenceBytes = statSync(reference).size;
const referenceMs = percentile(samples.get('reference') ?? [], 50);
const rows: string[][] = [
  ['reference: the SDK clients alone', String(referenceBytes), '1.00', referenceMs.toFixed(1), '1.00'],
];
const worst = { size: 0, time: 0 };
for (const [name, file] of files) {
  const bytes = statSync(file).size;
  const ms = percentile(samples.get(name) ?? [], 50);
  worst.size = Math.max(worst.size, bytes / referenceBytes);
  worst.time = Math.max(worst.time, ms / referenceMs);
  rows.push([
    name,
    String(bytes),
    (bytes / referenceBytes).toFixed(2),
    ms.toFixed(1),
    (ms / referenceMs).toFixed(2),
  ]);
}
printTable(
  `Function bundles (minified ESM) and module import time in a fresh process (p50 of ${runs})`,
  ['bundle', 'bytes', 'x reference', 'import ms', 'x reference'],
  rows,
);
console.log(
  `largest ratios: size ${worst.size.toFixed(2)} (goal <= 1.3), import ${worst.time.toFixed(2)} (goal <= 1.3)\n`,
);
rmSync(out, { recursive: true, force: true });
