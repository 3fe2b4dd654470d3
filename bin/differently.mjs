#!/usr/bin/env node
// `npx differently` inside this repository: runs the CLI's TypeScript source on the repository's own
// Node 24 (the `node` devDependency), whatever Node started npx. Users of the SDK package get plain
// JavaScript instead (npm run build:sdk).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const node = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
const cli = fileURLToPath(new URL('../cli/bin.ts', import.meta.url));
const result = spawnSync(existsSync(node) ? node : process.execPath, [cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
