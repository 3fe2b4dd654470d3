import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { outsideIgnoredFolder } from '../../../infra/local/sam-env.ts';

/** npm start --sam-env writes the admin key into a file: it warns where git would pick that file up. */
describe('where the SAM env file may go without a warning', () => {
  const checkout = '/home/me/differently';
  it.each([
    [join(checkout, 'env.json'), false],
    [join(checkout, '.differently', 'sam-env.json'), false],
    ['/tmp/sam-env.json', false],
    [join(checkout, 'sam.json'), true],
    [join(checkout, 'infra', 'env.json'), true],
    [join(checkout, '.differently-not', 'x.json'), true],
  ])('%s -> warn %s', (file, warn) => {
    expect(outsideIgnoredFolder(file, checkout)).toBe(warn);
  });
});
