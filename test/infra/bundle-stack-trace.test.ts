import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveBundleStackTrace } from '../../infra/bundle-stack-trace.ts';
import { functionBundleOptions } from '../../infra/function-bundle.ts';

const root = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'stack-trace-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A function that fails two calls deep, bundled as the CDK app bundles one, and the stack it logs on Lambda. */
async function deployedStack(): Promise<{ stack: string; bundleDir: string }> {
  const source = join(work, 'thrower.ts');
  writeFileSync(
    source,
    [
      'export function explode(reason: string): never {',
      "  throw new Error('boom: ' + reason);",
      '}',
      'export async function handler(): Promise<string> {',
      "  try { explode('on purpose'); } catch (error) { return (error as Error).stack ?? ''; }",
      "  return '';",
      '}',
      '',
    ].join('\n'),
  );
  const bundleDir = join(work, 'bundle');
  await build(functionBundleOptions(source, bundleDir));
  const entry = pathToFileURL(join(bundleDir, 'index.mjs')).href;
  const stack = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `process.stdout.write(await (await import('${entry}')).handler());`],
    { encoding: 'utf8' },
  );
  // Lambda unpacks the bundle at /var/task.
  return { stack: stack.replaceAll(`${pathToFileURL(bundleDir).href}/`, 'file:///var/task/'), bundleDir };
}

describe('a deployed function’s stack trace, mapped back to the sources (npm run stack-trace)', () => {
  it('names the source lines of each frame where the bundle names minified places', async () => {
    const { stack, bundleDir } = await deployedStack();
    // Minified, and not mapped at run time (functions run without --enable-source-maps).
    expect(stack).toMatch(/at \S+ \(file:\/\/\/var\/task\/index\.mjs:\d+:\d+\)/);
    expect(stack).not.toContain('thrower.ts');

    const resolved = resolveBundleStackTrace(stack, bundleDir);
    const frames = resolved.split('\n').filter((line) => line.trim().startsWith('at '));
    expect(frames[0]).toMatch(/thrower\.ts:2:\d+/);
    expect(frames[1]).toMatch(/thrower\.ts:5:\d+/);
    expect(resolved).not.toContain('/var/task/index.mjs');
    expect(resolved.split('\n')[0]).toBe('Error: boom: on purpose');
  }, 60_000);

  it('runs as npm run stack-trace, reading the stack from stdin, and leaves places without a map alone', async () => {
    const { stack, bundleDir } = await deployedStack();
    const unmapped = '    at elsewhere (file:///var/task/chunks/not-in-this-bundle.mjs:1:1)';
    const printed = execFileSync(
      process.execPath,
      [join(root, 'infra', 'resolve-stack-trace.ts'), bundleDir],
      { input: `${stack}\n${unmapped}\n`, encoding: 'utf8' },
    );
    expect(printed).toMatch(/thrower\.ts:2:\d+/);
    expect(printed).toContain(unmapped);
  }, 60_000);
});
