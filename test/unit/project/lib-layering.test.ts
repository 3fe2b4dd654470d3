import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url).pathname;
const lib = join(root, 'lib');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** A file's unit of layering: its top folder under lib/, or the file itself when it sits in lib/. */
function unitOf(path: string): string {
  const [first, ...rest] = relative(lib, path).split('/');
  return rest.length > 0 ? `${first}/` : String(first);
}

/** Static imports, re-exports and dynamic imports, type-only ones included: a type is a dependency too. */
const specifiers = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

/** Which units each unit of lib/ imports, each edge with one file import that makes it. */
function unitGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourcesUnder(lib)) {
    const from = unitOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const match of readFileSync(file, 'utf8').matchAll(specifiers)) {
      const spec = match[1] ?? match[2] ?? '';
      if (!spec.startsWith('.')) continue;
      const target = normalize(join(dirname(file), spec));
      if (!target.startsWith(`${lib}/`)) continue;
      const to = unitOf(target);
      if (to !== from && !edges.has(to))
        edges.set(to, `${relative(root, file)} -> ${relative(root, target)}`);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components: each of more than one unit is a loop of imports. */
function loops(graph: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (unit: string) => {
    index.set(unit, index.size);
    low.set(unit, index.get(unit) ?? 0);
    stack.push(unit);
    for (const next of graph.get(unit)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(unit, Math.min(low.get(unit) ?? 0, low.get(next) ?? 0));
      } else if (stack.includes(next)) low.set(unit, Math.min(low.get(unit) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(unit) !== index.get(unit)) return;
    const component: string[] = [];
    for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
      component.push(top);
      if (top === unit) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const unit of [...graph.keys()].sort()) if (!index.has(unit)) visit(unit);
  return found;
}

describe('lib/ is layered', () => {
  it('has no folder (or top-level file) that imports one importing it back, directly or through others', () => {
    const graph = unitGraph();
    const described = loops(graph).map((component) => ({
      loop: component,
      // The imports inside the loop: the ones to cut.
      imports: component.flatMap((unit) =>
        [...(graph.get(unit) ?? new Map<string, string>())]
          .filter(([to]) => component.includes(to))
          .map(([, example]) => example),
      ),
    }));
    expect(described).toEqual([]);
  });

  it('sees the imports it judges: the store is imported by the services above it, never the reverse', () => {
    const graph = unitGraph();
    expect(graph.get('sandboxes/')?.has('store/')).toBe(true);
    expect(graph.get('store/')?.has('sandboxes/')).toBe(false);
    expect(graph.get('mcp/')?.has('sandboxes/')).toBe(true);
  });
});
