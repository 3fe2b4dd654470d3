/**
 * Builds the code artifact of a Lambda MicroVMs image for a `lambda-microvms` pool
 * (`npm run build:microvm-image -- [--out DIR]`, default dist/lambda-microvms): the guest agent bundled
 * into one file for Node 20 and later, beside this folder's Dockerfile. Zip the folder's contents (the
 * Dockerfile at the zip's root) and give it to CreateMicrovmImage (README.md here).
 */
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const here = import.meta.dirname;
const root = resolve(here, '..', '..');
const { values } = parseArgs({ options: { out: { type: 'string' } }, strict: true });
const out = resolve(values.out ?? join(root, 'dist', 'lambda-microvms'));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'adapters', 'lambda-microvms', 'guest-agent.ts')],
  outfile: join(out, 'guest-agent.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  // Whatever Node the image installs, from 20 on.
  target: 'node20',
  legalComments: 'none',
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
});
copyFileSync(join(here, 'Dockerfile'), join(out, 'Dockerfile'));
process.stdout.write(`${out}: Dockerfile and guest-agent.mjs (zip them, the Dockerfile at the root)\n`);
