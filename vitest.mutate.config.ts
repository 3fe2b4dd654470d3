import { defineConfig } from 'vitest/config';

/**
 * What `npm run mutate` (StrykerJS) runs against each mutant: the unit project (no Java, no DynamoDB
 * Local), where the decision modules' rules are tested, and the integration suites that run the
 * scheduler on the memory store. Suites that need DynamoDB Local, SQS or the local runtime stay out of
 * the mutant loop.
 */
export default defineConfig({
  test: {
    include: [
      'test/unit/**/*.test.ts',
      'test/integration/scheduler/reconcile.test.ts',
      'test/integration/scheduler/conflict-retry.test.ts',
      'test/integration/scheduler/operations-worker.test.ts',
      'test/integration/pools/runtime-pools-across-containers.test.ts',
      'test/integration/scheduler/sweep.test.ts',
    ],
    testTimeout: 30_000,
    pool: 'forks',
  },
});
