/**
 * Lambda bundles (npm run bench): each function's minified bundle and its module import time in a fresh
 * Node process, side by side with a reference built and measured in the same run, with the same settings
 * (split into chunks like the functions): bench/sdk-clients-reference.ts, which imports and constructs
 * only the AWS SDK clients the functions use. Goals (issue #22): size and import time <= 1.3 x the
 * reference's.
 *
 * Import time on a busy machine moves by up to 1.5 x between runs, so where valgrind is installed
 * (`apt-get install valgrind`) each module's import is also counted in instructions, once: callgrind
 * under a deterministic V8 (`--predictable`, fixed seeds, one thread), repeatable to about 0.1 %
 * whatever else the machine runs, and a figure a change can be judged by.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { env } from '../functions/environment.ts';
import {
  bundleEntryName,
  functionBundleOptions,
  functionEntries,
  functionNodeOptions,
  staticClosure,
} from '../infra/function-bundle.ts';
import { percentile, printTable } from './stats.ts';

const out = mkdtempSync(join(tmpdir(), 'differently-bundles-'));
const runs = Number(process.env.BENCH_IMPORT_RUNS ?? 9);

const root = join(import.meta.dirname, '..');
const referenceEntry = join(import.meta.dirname, 'sdk-clients-reference.ts');

interface Bundle {
  /** The file Lambda imports. */
  file: string;
  /** What a cold start loads: the entry and the chunks it imports statically. */
  bytes: number;
  /** Every output file, the chunks only an import() reaches included. */
  allBytes: number;
  files: number;
}

/** An entry's bundle as the CDK app builds a function's (infra/function-bundle.ts). */
async function splitBundle(entry: string, outdir: string): Promise<Bundle> {
  const { metafile } = await build(functionBundleOptions(entry, outdir));
  const loaded = staticClosure(metafile, outdir);
  const outputs = Object.entries(metafile.outputs).filter(([path]) => path.endsWith('.mjs'));
  return {
    file: join(outdir, `${bundleEntryName}.mjs`),
    bytes: loaded.bytes,
    allBytes: outputs.reduce((sum, [, output]) => sum + output.bytes, 0),
    files: loaded.files.length,
  };
}

/**
 * The reference in one file, as the bench built it before 2026-12-05: shown for comparison with older
 * figures only. It compiles the SDK's lazily imported parts (credential providers...) at import, which
 * a split bundle leaves for later, so it is no measure for split functions.
 */
async function unsplitBundle(entry: string, outdir: string): Promise<Bundle> {
  const { splitting: _splitting, ...settings } = functionBundleOptions(entry, outdir);
  await build(settings);
  const file = join(outdir, `${bundleEntryName}.mjs`);
  const bytes = statSync(file).size;
  return { file, bytes, allBytes: bytes, files: 1 };
}

/**
 * The Node options a bundle is imported with: a function's as deployed (infra/function-bundle.ts), so an
 * option that costs at import shows here; the references run bare.
 */
function nodeOptionsOf(file: string): readonly string[] {
  return file === reference.file || file === unsplitReference.file ? [] : functionNodeOptions;
}

/** Wall time of importing the module in a fresh process (what a Lambda cold start pays before any work). */
function importMs(file: string): number {
  const script = `const t=performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now()-t));`;
  return Number(
    execFileSync(process.execPath, [...nodeOptionsOf(file), '--input-type=module', '-e', script], {
      encoding: 'utf8',
    }),
  );
}

/**
 * V8 made deterministic (no concurrent compilers or collectors, fixed seeds), so the same module costs the
 * same instructions on every run: the work moves to the main thread, which callgrind counts.
 */
const deterministicNode = ['--single-threaded', '--predictable', '--random-seed=1', '--hash-seed=1'];

function hasValgrind(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Instructions a fresh, deterministic Node process executes to start and import the module. */
function importInstructions(file: string): number {
  return run(`await import(${JSON.stringify(file)});`, nodeOptionsOf(file)).count;
}

/**
 * The environment a deployed function finds (functions/environment.ts), pointed nowhere: the first
 * invocations measured below make no backend call. One OpenSandbox pool, the admin key inline.
 */
const functionEnvironment: Record<string, string> = {
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  [env.configJson]: JSON.stringify({
    pools: [
      { name: 'bench', adapter: 'opensandbox', maxConcurrency: 5, config: { apiURL: 'http://127.0.0.1:9' } },
    ],
  }),
  [env.adminKey]: `dadm_${'k'.repeat(32)}`,
  [env.tableName]: 'bench',
  [env.provisionQueueUrl]: 'http://127.0.0.1:9/provision',
  [env.terminateQueueUrl]: 'http://127.0.0.1:9/terminate',
  [env.operationsQueueUrl]: 'http://127.0.0.1:9/operations',
  [env.webhooksQueueUrl]: 'http://127.0.0.1:9/webhooks',
};

/**
 * Instructions to import the module and answer one event, as a cold start does before any backend call:
 * the container's wiring (configuration, clients, pools) and, for the api, the route table and a route.
 * The answer must be `expected` (as JSON), so that no error path is measured instead.
 */
function firstInvocationInstructions(file: string, event: unknown, expected: string): number {
  const context = "{ functionName: 'bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 30_000 }";
  const { count, stdout } = run(
    [
      `const { handler } = await import(${JSON.stringify(file)});`,
      `const answer = await handler(${JSON.stringify(event)}, ${context});`,
      'process.stdout.write("\\n" + JSON.stringify(answer));',
    ].join('\n'),
    nodeOptionsOf(file),
  );
  const answer = stdout.split('\n').at(-1) ?? '';
  if (!answer.includes(expected)) throw new Error(`${file} answered ${answer}, not ${expected}`);
  return count;
}

/** Runs the script in a fresh, deterministic Node process under callgrind: its instructions and output. */
function run(script: string, nodeOptions: readonly string[] = []): { count: number; stdout: string } {
  const { stderr, stdout } = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--callgrind-out-file=/dev/null',
      process.execPath,
      ...deterministicNode,
      ...nodeOptions,
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8', env: { ...process.env, ...functionEnvironment } },
  );
  const count = /I\s+refs:\s+([\d,]+)/.exec(stderr)?.[1];
  if (count === undefined)
    throw new Error(`callgrind printed no instruction count for ${script}:\n${stderr}`);
  return { count: Number(count.replaceAll(',', '')), stdout };
}

const reference = await splitBundle(referenceEntry, join(out, 'sdk-clients'));
const unsplitReference = await unsplitBundle(referenceEntry, join(out, 'sdk-clients-one-file'));

const bundles = new Map<string, Bundle>();
for (const name of functionEntries)
  bundles.set(name, await splitBundle(join(root, 'functions', `${name}.ts`), join(out, name)));

// Samples interleaved (the references, then each function, repeated), so load and drift fall on all alike.
const measured = new Map<string, Bundle>([
  ['reference', reference],
  ['one-file reference', unsplitReference],
  ...bundles,
]);
const samples = new Map<string, number[]>([...measured.keys()].map((name) => [name, []]));
for (let run = 0; run < runs; run++)
  for (const [name, bundle] of measured) samples.get(name)?.push(importMs(bundle.file));
const referenceBytes = reference.bytes;
const referenceMs = percentile(samples.get('reference') ?? [], 50);
const row = (label: string, bundle: Bundle, ms: number): string[] => [
  label,
  String(bundle.files),
  String(bundle.bytes),
  (bundle.bytes / referenceBytes).toFixed(2),
  String(bundle.allBytes),
  ms.toFixed(1),
  (ms / referenceMs).toFixed(2),
];
const rows: string[][] = [
  row('reference: the SDK clients alone', reference, referenceMs),
  row(
    '(the same in one file, the reference before 2026-12-05)',
    unsplitReference,
    percentile(samples.get('one-file reference') ?? [], 50),
  ),
];
const worst = { size: 0, time: 0 };
for (const [name, bundle] of bundles) {
  const ms = percentile(samples.get(name) ?? [], 50);
  worst.size = Math.max(worst.size, bundle.bytes / referenceBytes);
  worst.time = Math.max(worst.time, ms / referenceMs);
  rows.push(row(name, bundle, ms));
}
printTable(
  `Function bundles (minified ESM, split) and module import time in a fresh process (p50 of ${runs}): what a cold start loads (the entry and its static chunks) beside every file`,
  ['bundle', 'files loaded', 'bytes loaded', 'x reference', 'bytes in all', 'import ms', 'x reference'],
  rows,
);
console.log(
  `largest ratios: size ${worst.size.toFixed(2)} (goal <= 1.3), import ${worst.time.toFixed(2)} (goal <= 1.3)\n`,
);

if (process.env.BENCH_INSTRUCTIONS !== '0' && hasValgrind()) {
  // What a bare process start costs is subtracted: the figure is the module's import alone.
  const empty = join(out, 'empty.mjs');
  writeFileSync(empty, '');
  const start = importInstructions(empty);
  const counts = new Map(
    [...measured].map(([name, bundle]) => [name, importInstructions(bundle.file) - start]),
  );
  const referenceCount = counts.get('reference') ?? Number.NaN;
  printTable(
    `Module import in instructions (callgrind, deterministic V8: one thread, fixed seeds; a bare process start subtracted; functions with their deployed Node options: ${functionNodeOptions.join(' ') || 'none'})`,
    ['bundle', 'million instructions', 'x reference'],
    [...counts].map(([name, count]) => [
      name === 'reference' ? 'reference: the SDK clients alone' : name,
      (count / 1e6).toFixed(1),
      (count / referenceCount).toFixed(2),
    ]),
  );
  const slowest = Math.max(...[...bundles.keys()].map((name) => (counts.get(name) ?? 0) / referenceCount));
  console.log(`largest import ratio in instructions: ${slowest.toFixed(2)} (goal <= 1.3)\n`);

  // Past the import: the first invocation builds what the functions build per container (the reference
  // built its clients at import and its handler does nothing). Events that make no backend call.
  const health = {
    httpMethod: 'GET',
    path: '/v1/health',
    headers: {},
    queryStringParameters: null,
    body: null,
    isBase64Encoded: false,
    requestContext: { requestId: 'bench' },
  };
  const firstEvents: [string, unknown, string][] = [
    ['api', health, '"statusCode":200'],
    ['provision', { Records: [] }, '{"batchItemFailures":[]}'],
  ];
  const referenceFirst = firstInvocationInstructions(reference.file, {}, '{}') - start;
  printTable(
    'Import and a first invocation that calls no backend, in instructions (api: GET /v1/health; provision: an empty batch)',
    ['bundle', 'million instructions', 'x reference', 'of which the invocation'],
    [
      ['reference: the SDK clients alone', (referenceFirst / 1e6).toFixed(1), '1.00', '-'],
      ...firstEvents.map(([name, event, expected]) => {
        const bundle = bundles.get(name);
        if (bundle === undefined) throw new Error(`no bundle ${name}`);
        const count = firstInvocationInstructions(bundle.file, event, expected) - start;
        return [
          name,
          (count / 1e6).toFixed(1),
          (count / referenceFirst).toFixed(2),
          `${((count - (counts.get(name) ?? 0)) / 1e6).toFixed(1)} M`,
        ];
      }),
    ],
  );
} else {
  console.log('import instructions: not counted (valgrind is not installed, or BENCH_INSTRUCTIONS=0)\n');
}
rmSync(out, { recursive: true, force: true });
