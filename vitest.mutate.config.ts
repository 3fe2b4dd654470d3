import { defineConfig } from 'vitest/config';

/**
 * What `npm run mutate` (StrykerJS) runs against each mutant: the unit project only (no Java, no
 * DynamoDB Local), where the decision modules' rules are tested; the slower suites stay out of the
 * mutant loop.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 30_000,
    pool: 'forks',
  },
});
