import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, that CI systems read
 * regardless of the test runner.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
      // A module that failed to load has no tests to count; count it as a failure.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    }
    process.stdout.write(
      `\nTests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
    );
  }
}
