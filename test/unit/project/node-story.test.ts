import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';

const root = new URL('../../../', import.meta.url);
const manifest = z
  .object({
    engines: z.object({ node: z.string() }),
    devEngines: z.object({ runtime: z.object({ version: z.string() }) }),
    devDependencies: z.object({ node: z.string() }),
  })
  .parse(JSON.parse(readFileSync(new URL('package.json', root), 'utf8')));

describe('one Node story', () => {
  it('README, engines, devEngines, .nvmrc and the Node the scripts run on agree', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const minimum = /with Node\.js (\d+\.\d+) or later and npm 11/.exec(readme)?.[1];
    expect(minimum).toBeDefined();
    expect(manifest.engines.node).toBe(`>=${minimum}`);
    expect(manifest.devEngines.runtime.version).toBe(`>=${minimum}`);
    const nvmrc = readFileSync(new URL('.nvmrc', root), 'utf8').trim();
    expect(manifest.devDependencies.node.split('.')[0]).toBe(nvmrc);
    expect(readme).toContain(`\`.nvmrc\` says ${nvmrc}`);
    // The deployment guide asks for the same Node as the README.
    const deploy = readFileSync(new URL('docs/deploy.md', root), 'utf8');
    expect(deploy).toContain(`Node.js ${minimum} or later with npm 11`);
    expect(deploy).not.toMatch(/Node\.js ≥ ?20\b/);
    // The scripts and tests run on that Node, whatever Node ran npm.
    expect(process.versions.node.split('.')[0]).toBe(nvmrc);
  });
});
