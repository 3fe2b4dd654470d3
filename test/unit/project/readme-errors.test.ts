import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCodes, httpStatusOf, publicCodeOf } from '../../../lib/errors.ts';

describe('the README on errors', () => {
  it('names every code a client can receive, with its status', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const paragraph = readme
      .slice(readme.indexOf('Every error is `{"error"'), readme.indexOf('## A first session with the CLI'))
      .replace(/\s+/g, ' ');
    const clientCodes = new Set(errorCodes.map(publicCodeOf));
    for (const code of clientCodes) expect(paragraph, code).toContain(`${httpStatusOf(code)} ${code}`);
  });
});
