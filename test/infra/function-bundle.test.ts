import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import {
  bundleRoot,
  functionBundleOptions,
  staticClosure,
  workerEntries,
} from '../../infra/function-bundle.ts';

const root = join(import.meta.dirname, '..', '..');
const out = mkdtempSync(join(tmpdir(), 'function-bundle-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The source files (relative to the project) that went into some of a bundle's output files. */
function inputsOf(metafile: Metafile, files: string[]): string[] {
  return files.flatMap((file) => Object.keys(metafile.outputs[file]?.inputs ?? {}));
}

/** A function bundled as the CDK app bundles it: the sources a cold start loads, and all it holds. */
async function bundled(entry: string): Promise<{ coldStart: string[]; all: string[] }> {
  const outdir = mkdtempSync(join(out, `${entry}-`));
  const { metafile } = await build(functionBundleOptions(join(root, 'functions', `${entry}.ts`), outdir));
  return {
    coldStart: inputsOf(metafile, staticClosure(metafile, outdir).files),
    all: Object.keys(metafile.inputs),
  };
}

describe('function bundles, as the CDK app builds them', () => {
  it("loads at a cold start only the entry's static chunks: the MCP SDK with its own zod, the adapters, the E2B facade, the memory store and zod's classic API wait for their import()", async () => {
    const outdir = join(out, 'api');
    const { metafile } = await build(functionBundleOptions(join(root, 'functions', 'api.ts'), outdir));
    const loaded = staticClosure(metafile, outdir);
    const every = Object.keys(metafile.outputs).filter((file) => file.endsWith('.mjs'));
    expect(loaded.files.length).toBeLessThan(every.length);
    const atColdStart = inputsOf(metafile, loaded.files);
    const later = inputsOf(
      metafile,
      every.filter((file) => !loaded.files.includes(file)),
    );
    const mcpSdk = (input: string) => input.includes('node_modules/@modelcontextprotocol/sdk/');
    const adapter = (input: string) => /^adapters\/(opensandbox|daytona)\/.*-adapter\.ts$/.test(input);
    // The E2B facade on the first /e2b request; the memory store only where DIFFERENTLY_STORE=memory asks.
    const e2bFacade = (input: string) => /^lib\/e2b\/(facade|control-api|envd|schemas)\.ts$/.test(input);
    const memoryStore = (input: string) => /^lib\/store\/(.+\/)?memory(-state)?\.ts$/.test(input);
    // The project validates with zod's mini API (lib/zod.ts); classic's methods would be loaded and run at
    // every cold start by one stray `import 'zod'` (only the MCP SDK, imported later, brings it).
    const zodClassic = (input: string) => input.includes('node_modules/zod/v4/classic/');
    expect(atColdStart.filter(mcpSdk)).toEqual([]);
    expect(atColdStart.filter(adapter)).toEqual([]);
    expect(atColdStart.filter(e2bFacade)).toEqual([]);
    expect(atColdStart.filter(memoryStore)).toEqual([]);
    expect(atColdStart.filter(zodClassic)).toEqual([]);
    expect(atColdStart).toContain('node_modules/zod/v4/mini/schemas.js');
    // The libraries' zod (the MCP SDK's) is a copy of its own, loaded with them: what it needs of zod's
    // core does not join the core the cold start runs (librariesOwnZod).
    const librariesZod = (input: string) => input.startsWith('libraries-zod:');
    expect(atColdStart.filter(librariesZod)).toEqual([]);
    expect(later).toContain('libraries-zod:node_modules/zod/v4/core/schemas.js');
    expect(later).toContain('libraries-zod:node_modules/zod/v4/classic/schemas.js');
    expect(later.filter(e2bFacade).sort()).toEqual([
      'lib/e2b/control-api.ts',
      'lib/e2b/envd.ts',
      'lib/e2b/facade.ts',
      'lib/e2b/schemas.ts',
    ]);
    expect(later).toContain('lib/store/memory.ts');
    expect(later.some(mcpSdk)).toBe(true);
    expect(later.filter(adapter).sort()).toEqual([
      'adapters/daytona/daytona-adapter.ts',
      'adapters/opensandbox/opensandbox-adapter.ts',
    ]);
    // The entry has the handler; every chunk, loaded alone in a fresh Node, resolves what it imports.
    const check = [
      `const entry = await import(${JSON.stringify(pathToFileURL(join(outdir, 'index.mjs')).href)});`,
      "if (typeof entry.handler !== 'function') throw new Error('no handler');",
      ...every.map((file) => `await import(${JSON.stringify(pathToFileURL(join(bundleRoot, file)).href)});`),
      "process.stdout.write('loaded');",
    ].join('\n');
    const loadedAll = execFileSync(process.execPath, ['--input-type=module', '-e', check], {
      encoding: 'utf8',
      env: { ...process.env, AWS_REGION: 'eu-west-1' },
    });
    expect(loadedAll).toBe('loaded');
  }, 120_000);

  it("leaves middy's response streaming, and the web streams it imports, to the streaming function's bundle", async () => {
    const streamingMode = 'node_modules/@middy/core/executionModeStreamifyResponse.js';
    expect((await bundled('api')).coldStart).not.toContain(streamingMode);
    expect((await bundled('api-stream')).coldStart).toContain(streamingMode);
  }, 120_000);

  it("leaves the API's edge middlewares (security headers, error envelope) to the API's bundles", async () => {
    const securityHeaders = 'node_modules/@middy/http-security-headers/index.js';
    for (const worker of ['provision', 'webhooks', 'sweep'])
      expect((await bundled(worker)).all, worker).not.toContain(securityHeaders);
    expect((await bundled('api')).all).toContain(securityHeaders);
  }, 120_000);

  it('serves the OpenAPI document as built: neither it nor a JSON Schema generator is in the API cold start', async () => {
    const generators = [
      'lib/http/openapi.ts',
      'node_modules/zod/v4/core/to-json-schema.js',
      'node_modules/zod/v4/core/json-schema-processors.js',
    ];
    for (const entry of ['api', 'api-stream']) {
      const { coldStart, all } = await bundled(entry);
      expect(
        coldStart.filter((input) => generators.includes(input) || input === 'docs/openapi.json'),
      ).toEqual([]);
      // The document itself comes with its first request, in a chunk of its own.
      expect(all, entry).toContain('docs/openapi.json');
    }
  }, 120_000);

  it("builds no API request or response shape in a worker's cold start: records share only their parts", async () => {
    // Modules of the API's shapes (lib/schemas/sandbox-parts.ts and tenancy-parts.ts hold what records use).
    const apiShapes = [
      'lib/schemas/sandboxes.ts',
      'lib/schemas/tenancy.ts',
      'lib/schemas/sandbox-operations.ts',
      'lib/schemas/common.ts',
    ];
    for (const worker of workerEntries) {
      const { coldStart } = await bundled(worker);
      expect(
        coldStart.filter((input) => apiShapes.includes(input)),
        worker,
      ).toEqual([]);
      expect(coldStart, worker).toContain('lib/schemas/sandbox-parts.ts');
    }
    expect((await bundled('api')).coldStart).toEqual(expect.arrayContaining(apiShapes));
  }, 180_000);

  it('follows static imports transitively, never dynamic ones', () => {
    const dir = join(out, 'closure');
    const at = (file: string) => relative(bundleRoot, join(dir, file));
    const output = (bytes: number, imports: Metafile['outputs'][string]['imports']) => ({
      bytes,
      inputs: {},
      imports,
      exports: [],
    });
    const metafile: Metafile = {
      inputs: {},
      outputs: {
        [at('index.mjs')]: output(100, [
          { path: at('chunks/a.mjs'), kind: 'import-statement' },
          { path: at('chunks/lazy.mjs'), kind: 'dynamic-import' },
          { path: 'node:fs', kind: 'import-statement', external: true },
        ]),
        [at('chunks/a.mjs')]: output(20, [{ path: at('chunks/b.mjs'), kind: 'import-statement' }]),
        [at('chunks/b.mjs')]: output(3, [{ path: at('chunks/a.mjs'), kind: 'import-statement' }]),
        [at('chunks/lazy.mjs')]: output(5000, [{ path: at('chunks/b.mjs'), kind: 'import-statement' }]),
      },
    };
    const closure = staticClosure(metafile, dir);
    expect(closure.bytes).toBe(123);
    expect(closure.files.sort()).toEqual([at('chunks/a.mjs'), at('chunks/b.mjs'), at('index.mjs')]);
    expect(() => staticClosure(metafile, join(out, 'elsewhere'))).toThrow(/no entry/);
  });
});
