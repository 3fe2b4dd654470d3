import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '../../..');
const store = join(repo, 'lib/store');
/** The one file where item keys, and so their prefixes, are written (keyOf, sortPrefix). */
const keyFile = 'lib/store/dynamodb/items.ts';

/**
 * A key prefix written as text outside lib/store/dynamodb/items.ts: a string or template literal that
 * starts like an item key (`'SBX#'`, `` `EVT#${...}` ``, `'VIEW'` for the views and marks).
 */
const literalPrefix = /['`](?:[A-Z]{2,}#|VIEW['`])/g;

describe('store queries', () => {
  it('take their key prefixes from the key functions only', async () => {
    const offenders: string[] = [];
    for (const entry of await readdir(store, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const path = relative(repo, join(entry.parentPath, entry.name));
      if (path === keyFile) continue;
      const lines = (await readFile(join(repo, path), 'utf8')).split('\n');
      lines.forEach((line, index) => {
        if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
        for (const match of line.matchAll(literalPrefix)) offenders.push(`${path}:${index + 1}: ${match[0]}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
