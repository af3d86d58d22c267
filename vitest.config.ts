import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The suite runs on PGlite + chDB always, and again on the Postgres server when
 * DATABASE_URL is set (TEST_STORE tells the harness which). Each worker process runs
 * file after file (isolate: false): a file's fixed cost, loading the service's modules
 * and compiling PGlite's and chDB's engines, is paid once per worker instead of once
 * per file (docs/decisions.md, "Test files share their worker"). Every file closes what
 * it opens; chDB takes one data directory at a time per process.
 */
const common = {
  include: ['test/**/*.test.ts'],
  pool: 'forks' as const,
  isolate: false,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  // The browser tests poll the page for what a request brings, which on a loaded shared machine
  // can take longer than vitest's default second (docs/decisions.md, "Polls wait 10 s").
  expect: { poll: { timeout: 10_000 } },
};

/**
 * Files whose subject is the protocol (real peers through a gateway), the call-log
 * store (ClickHouse) or pure input handling, not the service database: the Postgres
 * project does not run them a second time. What they pass through of the service
 * database (a token, a catalog, a learned revision) goes through the same kysely
 * queries the files that run on both cover on the Postgres server: the CRUD files of
 * every resource, the session store, the replicas' relay and locks, the forwarder's
 * cursors, the store outages (docs/decisions.md, "Two store projects, one suite").
 */
const ONCE = [
  // The protocol through a gateway.
  'test/gateway-2026.test.ts',
  'test/gateway-batches.test.ts',
  'test/gateway-bridging.test.ts',
  'test/gateway-conformance.test.ts',
  'test/gateway-core-tasks.test.ts',
  'test/gateway-curation.test.ts',
  'test/gateway-cursors.test.ts',
  'test/gateway-direct-path.test.ts',
  'test/gateway-era-matrix.test.ts',
  'test/gateway-event-stream-resume.test.ts',
  'test/gateway-hostile-input.test.ts',
  'test/gateway-inspector.test.ts',
  'test/gateway-legacy-sse.test.ts',
  'test/gateway-list-changes.test.ts',
  'test/gateway-listen.test.ts',
  'test/gateway-naming.test.ts',
  'test/gateway-param-headers.test.ts',
  'test/gateway-proxy.test.ts',
  'test/gateway-resource-subscriptions.test.ts',
  'test/gateway-resume.test.ts',
  'test/gateway-revision-relearn.test.ts',
  'test/gateway-sse.test.ts',
  'test/gateway-tasks.test.ts',
  'test/gateway-tool-name-limits.test.ts',
  'test/gateway-upstream-client.test.ts',
  'test/gateway-upstream-malformed.test.ts',
  'test/gateway-upstream-refusals.test.ts',
  'test/fuzz-gateway.test.ts',
  'test/stream-replay.test.ts',
  // The call-log store and what reads it.
  'test/logs-ddl.test.ts',
  'test/logs-query.test.ts',
  'test/logs-read-after-write.test.ts',
  'test/logs-seed.test.ts',
  'test/logs-upgrade.test.ts',
  'test/logs-writer.test.ts',
  'test/usage-report.test.ts',
  'test/usage-rollups.test.ts',
  'test/forwarder-encoding.test.ts',
  'test/collector-client.test.ts',
  // Rules with no store under them.
  'test/bounded-memo.test.ts',
  'test/egress.test.ts',
  'test/egress-connect.test.ts',
  'test/redaction.test.ts',
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
