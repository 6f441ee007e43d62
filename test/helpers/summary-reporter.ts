// Ends every run with one plain, uncoloured line, "Tests: N passed, N failed, N skipped", that any CI log reader can parse.
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failedTests += 1;
        else skipped += 1;
      }
      // A file that failed to load, or a failing beforeAll/afterAll, fails the file without failing a test: count it once.
      failed += failedTests > 0 || module.state() !== 'failed' ? failedTests : 1;
    }
    failed += unhandledErrors.length;
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
