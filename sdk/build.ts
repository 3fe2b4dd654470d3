/**
 * Builds the installable SDK and CLI package in dist/sdk-package (`npm run build:sdk`), then packs it
 * (`npm pack`) into dist/: plain JavaScript for Node 20 and later (bundled with esbuild; zod stays a
 * dependency, as the type declarations refer to it) and the declarations tsc emits.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BuildOptions, build } from 'esbuild';
import * as z from 'zod';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'dist', 'sdk-package');
const manifest = z
  .object({ version: z.string(), dependencies: z.object({ zod: z.string() }) })
  .parse(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const common: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  // The oldest Node the package supports: users install the SDK and CLI on their own Node.
  target: 'node20',
  external: ['zod'],
  legalComments: 'none',
};
await build({ ...common, entryPoints: [join(root, 'sdk', 'index.ts')], outfile: join(out, 'index.js') });
await build({
  ...common,
  entryPoints: [join(root, 'cli', 'bin.ts')],
  outfile: join(out, 'cli.js'),
  // Some bundled code calls require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
});

// Declarations, with the `.ts` specifiers of the sources turned into the `.js` ones of a package.
execFileSync(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'sdk', 'tsconfig.build.json')],
  {
    stdio: 'inherit',
  },
);
function rewrite(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) rewrite(path);
    else if (name.endsWith('.d.ts'))
      writeFileSync(path, readFileSync(path, 'utf8').replace(/(from '\.{1,2}\/[^']*)\.ts'/g, "$1.js'"));
  }
}
rewrite(join(out, 'types'));

writeFileSync(
  join(out, 'package.json'),
  `${JSON.stringify(
    {
      name: 'differently-sdk',
      version: manifest.version,
      description: 'The Differently sandbox control plane: TypeScript SDK and the differently CLI',
      type: 'module',
      engines: { node: '>=20' },
      exports: { '.': { types: './types/sdk/index.d.ts', import: './index.js' } },
      types: './types/sdk/index.d.ts',
      bin: { differently: './cli.js' },
      files: ['index.js', 'cli.js', 'types', 'README.md'],
      dependencies: { zod: manifest.dependencies.zod },
      license: 'Apache-2.0',
    },
    null,
    2,
  )}\n`,
);
cpSync(join(root, 'sdk', 'README.md'), join(out, 'README.md'));
const packed = execFileSync('npm', ['pack', '--pack-destination', join(root, 'dist')], {
  cwd: out,
  encoding: 'utf8',
})
  .trim()
  .split('\n')
  .at(-1);
process.stdout.write(`dist/${packed}\n`);
