import { describe, expect, it } from 'vitest';

describe('toolchain', () => {
  it('runs the tests on Node 24, the Lambda runtime nodejs24.x', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
  });
});
