import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url).pathname;

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [relative(root, join(root, dir, entry.name))],
  );
}

describe('docs/architecture.md maps lib/', () => {
  it('names every file of lib/, directly or by its folder, and nothing that is not there', () => {
    const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
    const named = [...doc.matchAll(/^\| `(lib\/[^`]+)` \|/gm)].map(([, path]) => String(path));
    const files = filesUnder('lib');
    for (const file of files)
      expect(
        named.some((path) => file === path || (path.endsWith('/') && file.startsWith(path))),
        file,
      ).toBe(true);
    for (const path of named)
      expect(
        files.some((file) => file === path || file.startsWith(path)),
        path,
      ).toBe(true);
  });

  it('keeps lib/ free of the other layers', () => {
    for (const file of filesUnder('lib')) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text, file).not.toMatch(/from '(\.\.\/)+(functions|adapters|infra|sdk|cli)\//);
    }
  });
});
