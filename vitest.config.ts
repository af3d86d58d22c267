import { configDefaults, defineConfig } from 'vitest/config';

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

/**
 * Files whose subject is the protocol (real peers through a gateway) or the call-log
 * store (ClickHouse), not the service database: the Postgres project does not run them
 * a second time. What they pass through of the service database (a token, a catalog)
 * the files that run on both cover.
 */
const ONCE = [
  'test/gateway-conformance.test.ts',
  'test/gateway-era-matrix.test.ts',
  'test/gateway-inspector.test.ts',
  'test/logs-writer.test.ts',
  'test/logs-upgrade.test.ts',
];

export default defineConfig({
  test: {
    maxWorkers: 2,
    globalSetup: ['test/global-setup.ts'],
    projects: [
      { test: { ...common, name: 'pglite', env: { TEST_STORE: 'pglite' } } },
      ...(process.env.DATABASE_URL
        ? [{ test: { ...common, name: 'postgres', exclude: [...configDefaults.exclude, ...ONCE], env: { TEST_STORE: 'postgres' } } }]
        : []),
    ],
  },
});
