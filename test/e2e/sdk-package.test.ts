import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRuntime, startLocalRuntime } from '../../infra/local/runtime.ts';
import { client } from '../helpers/http-client.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;

/** Every Node on PATH other than this repository's own (the one a user has), and the Node 24 tests run on. */
function nodes(): string[] {
  const found = new Map<string, string>([[realpathSync(process.execPath), process.execPath]]);
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir.includes('node_modules')) continue;
    const candidate = join(dir, 'node');
    if (existsSync(candidate) && !found.has(realpathSync(candidate)))
      found.set(realpathSync(candidate), candidate);
  }
  return [...found.values()];
}

/** The README's SDK snippet, as a user copies it. */
function readmeSnippet(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The TypeScript SDK'));
  const snippet = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (snippet === undefined) throw new Error('the README has no SDK snippet');
  return snippet;
}

describe('the SDK and the CLI as an installed package', () => {
  let runtime: LocalRuntime;
  let folder: string;
  let orgKey: string;

  beforeAll(async () => {
    const built = execFileSync(process.execPath, [join(root, 'sdk', 'build.ts')], {
      cwd: root,
      encoding: 'utf8',
    });
    const tarball = join(root, built.trim().split('\n').at(-1) ?? '');
    folder = mkdtempSync(join(tmpdir(), 'sdk-user-'));
    writeFileSync(
      join(folder, 'package.json'),
      JSON.stringify({ name: 'a-user', private: true, type: 'module' }),
    );
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: folder });
    runtime = await startLocalRuntime({ sweepIntervalSeconds: 0, reconcileIntervalSeconds: 0 });
    const api = client(runtime.url);
    const org = (await api.post('/v1/admin/orgs', runtime.adminKey, { name: 'package' })).body as {
      id: string;
    };
    orgKey = (
      (await api.post(`/v1/admin/orgs/${org.id}/keys`, runtime.adminKey, { name: 'k' })).body as {
        key: string;
      }
    ).key;
  }, 180_000);

  afterAll(async () => {
    await runtime?.stop();
  });

  it.each(nodes())(
    'runs the README’s SDK snippet and `differently --help` on %s',
    async (node) => {
      const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
      expect(Number(version.slice(1).split('.')[0])).toBeGreaterThanOrEqual(20);
      writeFileSync(join(folder, 'first.mjs'), readmeSnippet().replace('http://127.0.0.1:8080', runtime.url));
      const snippet = await run(node, ['first.mjs'], {
        cwd: folder,
        env: { ...process.env, DIFFERENTLY_API_KEY: orgKey },
        timeout: 60_000,
      });
      expect(snippet.stdout).toContain("data: 'hello from the SDK\\n'");
      expect(snippet.stdout).toContain('exitCode: 0');
      const help = await run(node, [join(folder, 'node_modules', '.bin', 'differently'), '--help'], {
        cwd: folder,
      });
      expect(help.stdout).toContain('Usage: differently <command> [options]');
    },
    90_000,
  );

  it('type-checks a TypeScript user of the package against its declarations', async () => {
    writeFileSync(
      join(folder, 'typed.ts'),
      `import { DifferentlyClient, type SandboxView } from 'differently-sdk';
const client = new DifferentlyClient({ endpoint: 'http://127.0.0.1:1', apiKey: 'k' });
export const status = async (id: string): Promise<SandboxView['status']> => (await client.getSandbox(id)).status;
// @ts-expect-error createSandbox takes a request object, not a number
export const wrong = () => client.createSandbox(42);
`,
    );
    writeFileSync(
      join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          // As most projects set it (tsc --init does): our use of the package is checked, not its internals.
          skipLibCheck: true,
          types: [],
        },
        files: ['typed.ts'],
      }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', folder]).catch(
      (error: { stdout?: string }) => error,
    );
    expect('stdout' in checked ? checked.stdout : '').toBe('');
  }, 60_000);
});
