import { defineConfig } from 'vitest/config';

/**
 * The suite runs on PGlite + chDB always, and again on the Postgres server when
 * DATABASE_URL is set (TEST_STORE tells the harness which). One process per test
 * file: chDB admits one data directory per process.
 */
const common = {
  include: ['test/**/*.test.ts'],
  pool: 'forks' as const,
  isolate: true,
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    maxWorkers: 2,
    projects: [
      { test: { ...common, name: 'pglite', env: { TEST_STORE: 'pglite' } } },
      ...(process.env.DATABASE_URL ? [{ test: { ...common, name: 'postgres', env: { TEST_STORE: 'postgres' } } }] : []),
    ],
  },
});
