import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url).pathname;
const maxLines = 700;
const sourceFolders = ['lib', 'adapters', 'functions', 'infra', 'sdk', 'cli', 'bench', 'test', 'examples'];
const skipped = new Set(['node_modules', '_build', 'recordings', 'dist', 'cdk.out']);

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return skipped.has(entry.name) ? [] : sourcesUnder(path);
    return /\.(ts|mts|py)$/.test(entry.name) ? [path] : [];
  });
}

describe('the tree', () => {
  it(`has no source file over ${maxLines} lines: a larger one holds more than one concept`, () => {
    const files = sourceFolders.flatMap((folder) => sourcesUnder(join(root, folder)));
    expect(files.length).toBeGreaterThan(300);
    const over = files
      .map((file) => ({
        file: relative(root, file),
        lines: readFileSync(file, 'utf8').split('\n').length - 1,
      }))
      .filter(({ lines }) => lines > maxLines);
    expect(over).toEqual([]);
  });
});
