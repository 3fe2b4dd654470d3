import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        // Pure logic, fakes and loopback servers: no Java, no DynamoDB Local, no network (npm run test:unit).
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        // DynamoDB Local (Java) is started once for these by the global setup.
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**'],
          globalSetup: ['./test/global-setup.ts'],
        },
      },
    ],
  },
});
