#!/usr/bin/env node
import { run } from './differently.ts';

// The installed `differently` command: runs on any Node the package supports (20 and later).
run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  terminal: { stdin: process.stdin, stdout: process.stdout },
}).then((code) => {
  process.exitCode = code;
});
