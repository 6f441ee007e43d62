import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Two cores: forks keep native modules and PGlite isolated per file without oversubscribing.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // The default report for people, then one plain summary line for CI logs.
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        // Pure code only: no global setup, so running these never starts Kafka.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Starts Kafka, the schema registry, Redis and PostgreSQL once; runs only when an integration file is selected.
          globalSetup: ['test/global-setup.ts'],
          setupFiles: ['test/worker-setup.ts'],
        },
      },
    ],
  },
});
