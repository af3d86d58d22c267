import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_LOG_SCHEMA, DETAIL_COLUMNS, GROUP_COLUMNS, THIN_COLUMNS, type ColumnSpec } from '../src/core/logs/call-log-schema.js';
import { USAGE_ROLLUPS } from '../src/core/logs/usage-rollups.js';
import { DURATION_BUCKET_SQL, USAGE_QUANTILES } from '../src/stores/usage-rollup-sql.js';
import { listDdlFiles, renderDdlFile } from '../src/stores/clickhouse.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

/** The cluster variant (CLICKHOUSE_CLUSTER) is checked by its generated DDL: no cluster runs here. */
const files = listDdlFiles();
const render = (cluster?: string) => files.flatMap((f) => renderDdlFile(f.sql, { retentionDays: 30, cluster }));
/** A statement without its comments, on one line. */
const bare = (s: string) => s.replace(/--.*$/gm, '').replace(/\s+/g, ' ').trim();
const creates = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('CREATE'));
/** The CREATEs of the four log tables (and their Distributed tables), without the usage rollups and their views. */
const logTables = (cluster?: string) => creates(cluster).filter((s) => !s.includes('call_log_usage_'));
/** The statements that create or fill one rollup table (not the ones that only read it). */
const rollupStatements = (table: string, cluster?: string) =>
  render(cluster)
    .map(bare)
    .filter((s) =>
      new RegExp(`^(CREATE TABLE IF NOT EXISTS|CREATE MATERIALIZED VIEW IF NOT EXISTS \\w+|INSERT INTO) ${table}(_local)?\\b|TO ${table}(_local)? AS`).test(s),
    );
const alters = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('ALTER'));
/** The ALTERs of clickhouse/0004 (the forwarder's ingest order). */
const ingestOrderAlters = (cluster?: string) => alters(cluster).filter((s) => !s.includes('protocol_version'));

describe('ClickHouse DDL', () => {
  it("ships the call_logs, call_log_details and alerts tables in order, the forwarder's ingest order, the usage rollup and the audit log", () => {
    expect(files.map((f) => f.name)).toEqual([
      '0001_call_logs.sql',
      '0002_call_log_details.sql',
      '0003_alerts.sql',
      '0004_forwarder_ingest_order.sql',
      '0005_call_log_usage_hourly.sql',
      '0006_audit_log.sql',
      '0007_call_log_protocol_version.sql',
      '0008_call_log_usage_daily.sql',
      '0009_call_log_usage_minute.sql',
      '0010_call_log_usage_daily_people.sql',
    ]);
  });

  it('renders single-node tables with MergeTree, the retention TTL and no placeholder left', () => {
    const sql = logTables();
    expect(sql).toHaveLength(4);
    for (const s of sql) {
      expect(s).not.toMatch(/\$\{/);
      expect(s).toMatch(/ENGINE = MergeTree\s/);
      expect(s).toContain('INTERVAL 30 DAY');
      expect(s).not.toMatch(/ON CLUSTER|Distributed|_local/);
      expect(s).toMatch(/ORDER BY \(organization_guid, created_at, guid\)/);
    }
    expect(sql[0]).toMatch(/CREATE TABLE IF NOT EXISTS call_logs\s/);
    expect(sql[0]).toMatch(/INDEX idx_ingested_at ingested_at TYPE minmax/);
    expect(sql[0]).toMatch(/INDEX idx_trace_id trace_id TYPE bloom_filter/);
  });

  it('renders a cluster: Replicated local tables on every shard and Distributed tables named as the queries expect', () => {
    const sql = logTables('logs_cluster');
    expect(sql).toHaveLength(8);
    for (const table of ['call_logs', 'call_log_details', 'alerts', 'audit_log']) {
      const local = sql.find((s) => s.includes(`CREATE TABLE IF NOT EXISTS ${table}_local ON CLUSTER logs_cluster`));
      expect(local).toMatch(/ENGINE = ReplicatedMergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'\)/);
      const distributed = sql.find((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER`));
      expect(distributed).toBe(
        `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER logs_cluster AS ${table}_local ENGINE = Distributed(logs_cluster, currentDatabase(), ${table}_local, cityHash64(guid))`,
      );
      // The Distributed table is created after the local one it points to.
      expect(sql.indexOf(distributed!)).toBeGreaterThan(sql.indexOf(local!));
    }
    for (const s of sql) expect(s).not.toMatch(/\$\{/);
  });

  it('stamps ingested_at on the server and adds the forwarder_order projection, on one node and on every shard', () => {
    const projection =
      'ADD PROJECTION IF NOT EXISTS forwarder_order ( SELECT organization_guid, ingested_at, toString(guid), created_at ORDER BY organization_guid, ingested_at, toString(guid) )';
    expect(ingestOrderAlters().map(bare)).toEqual([
      'ALTER TABLE call_logs MODIFY COLUMN ingested_at DEFAULT now64(3)',
      'ALTER TABLE call_logs MODIFY COLUMN ingested_at DEFAULT now64(3)',
      `ALTER TABLE call_logs ${projection}`,
      'ALTER TABLE call_logs MATERIALIZE PROJECTION forwarder_order',
    ]);
    // On a cluster the Replicated local tables get the default and the projection; the
    // Distributed table, which fills the defaults of the rows inserted through it, the default.
    expect(ingestOrderAlters('logs_cluster').map(bare)).toEqual([
      'ALTER TABLE call_logs_local ON CLUSTER logs_cluster MODIFY COLUMN ingested_at DEFAULT now64(3)',
      'ALTER TABLE call_logs ON CLUSTER logs_cluster MODIFY COLUMN ingested_at DEFAULT now64(3)',
      `ALTER TABLE call_logs_local ON CLUSTER logs_cluster ${projection}`,
      'ALTER TABLE call_logs_local ON CLUSTER logs_cluster MATERIALIZE PROJECTION forwarder_order',
    ]);
  });

  it('adds the hourly usage rollup, fed by a materialized view and backfilled, on one node and on every shard', () => {
    const single = rollupStatements('call_log_usage_hourly');
    expect(single).toHaveLength(3);
    expect(single[0]).toMatch(
      /^CREATE TABLE IF NOT EXISTS call_log_usage_hourly \(.*\) ENGINE = AggregatingMergeTree PARTITION BY .* TTL hour \+ INTERVAL 30 DAY/,
    );
    expect(single[1]).toMatch(/^CREATE MATERIALIZED VIEW IF NOT EXISTS call_log_usage_hourly_mv TO call_log_usage_hourly AS SELECT .* FROM call_logs GROUP BY/);
    expect(single[2]).toMatch(/^INSERT INTO call_log_usage_hourly SELECT .* FROM call_logs GROUP BY/);
    // The view and the backfill bucket durations as the report's raw reads do.
    for (const s of single.slice(1)) expect(s).toContain(`quantilesExactWeightedInterpolatedState(0.5, 0.95, 0.99)(${DURATION_BUCKET_SQL}, toUInt8(1))`);
    const cluster = rollupStatements('call_log_usage_hourly', 'logs_cluster');
    expect(cluster).toHaveLength(4);
    expect(cluster[0]).toMatch(
      /^CREATE TABLE IF NOT EXISTS call_log_usage_hourly_local ON CLUSTER logs_cluster \(.*\) ENGINE = ReplicatedAggregatingMergeTree\(/,
    );
    // The view reads each shard's local rows into that shard's local rollup.
    expect(cluster[1]).toMatch(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS call_log_usage_hourly_mv_local ON CLUSTER logs_cluster TO call_log_usage_hourly_local AS SELECT .* FROM call_logs_local GROUP BY/,
    );
    expect(cluster[2]).toMatch(/^INSERT INTO call_log_usage_hourly_local SELECT .* FROM call_logs_local/);
    expect(cluster[3]).toBe(
      'CREATE TABLE IF NOT EXISTS call_log_usage_hourly ON CLUSTER logs_cluster AS call_log_usage_hourly_local ENGINE = Distributed(logs_cluster, currentDatabase(), call_log_usage_hourly_local, cityHash64(organization_guid))',
    );
  });

  it.each([
    ['call_log_usage_daily', 'call_log_usage_hourly', 'MergeState'],
    ['call_log_usage_minute', 'call_logs', 'State'],
    ['call_log_usage_daily_people', 'call_logs', 'State'],
  ])('adds %s, fed from %s by a materialized view and backfilled, on one node and on every shard', (table, source, combinator) => {
    const states = `quantilesExactWeightedInterpolated${combinator}(0.5, 0.95, 0.99)(`;
    const single = rollupStatements(table);
    expect(single).toHaveLength(3);
    expect(single[0]).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS ${table} \\(.*\\) ENGINE = AggregatingMergeTree .* TTL \\w+ \\+ INTERVAL 30 DAY`));
    expect(single[1]).toMatch(new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS SELECT .* FROM ${source} GROUP BY`));
    expect(single[2]).toMatch(new RegExp(`^INSERT INTO ${table} SELECT .* FROM ${source} GROUP BY`));
    for (const s of single.slice(1)) expect(s).toContain(combinator === 'State' ? `${states}${DURATION_BUCKET_SQL}, toUInt8(1))` : `${states}durations)`);
    const cluster = rollupStatements(table, 'logs_cluster');
    expect(cluster).toHaveLength(4);
    expect(cluster[0]).toMatch(
      new RegExp(`^CREATE TABLE IF NOT EXISTS ${table}_local ON CLUSTER logs_cluster \\(.*\\) ENGINE = ReplicatedAggregatingMergeTree\\(`),
    );
    expect(cluster[1]).toMatch(
      new RegExp(
        `^CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv_local ON CLUSTER logs_cluster TO ${table}_local AS SELECT .* FROM ${source}_local GROUP BY`,
      ),
    );
    expect(cluster[3]).toBe(
      `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER logs_cluster AS ${table}_local ENGINE = Distributed(logs_cluster, currentDatabase(), ${table}_local, cityHash64(organization_guid))`,
    );
  });

  it('adds protocol_version to call_logs, on one node and on every shard and the Distributed table', () => {
    const column = "ADD COLUMN IF NOT EXISTS protocol_version LowCardinality(String) DEFAULT '' AFTER session_id";
    const added = (cluster?: string) =>
      alters(cluster)
        .filter((s) => s.includes('protocol_version'))
        .map(bare);
    expect(added()).toEqual([`ALTER TABLE call_logs ${column}`, `ALTER TABLE call_logs ${column}`]);
    // The Distributed table must carry the column too: rows inserted through it are shaped by its structure.
    expect(added('logs_cluster')).toEqual([
      `ALTER TABLE call_logs_local ON CLUSTER logs_cluster ${column}`,
      `ALTER TABLE call_logs ON CLUSTER logs_cluster ${column}`,
    ]);
  });
});

/**
 * The one declaration of the call-log columns (src/core/logs/call-log-schema.ts)
 * against the tables as ClickHouse applied the DDL: every declared column exists with
 * its type and place, and every column of the tables is declared.
 */
describe('the call-log column declaration', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A table's columns as system.columns lists them, in table order. */
  async function columnsOf(table: string): Promise<{ name: string; type: string }[]> {
    const result = await t.runtime.services.clickhouse.client.query({
      query: 'SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {table:String} ORDER BY position',
      query_params: { table },
      format: 'JSONEachRow',
    });
    return result.json<{ name: string; type: string }>();
  }
  const declared = (names: readonly string[]) =>
    names.map((name) => {
      const c = (CALL_LOG_SCHEMA as readonly ColumnSpec[]).find((d) => d.name === name)!;
      return { name: c.name, type: c.type };
    });

  it('matches call_logs: the same columns, types and order, both ways', async () => {
    const actual = await columnsOf('call_logs');
    expect(actual.length).toBeGreaterThan(0);
    expect(actual).toEqual(declared(THIN_COLUMNS));
  });

  it('matches call_log_details: the same columns, types and order, both ways', async () => {
    expect(await columnsOf('call_log_details')).toEqual(declared(DETAIL_COLUMNS));
  });

  it.each(USAGE_ROLLUPS.map((r) => [r.table, r] as const))(
    "declares %s's keys: group keys, with call_logs' types, the only key columns it has",
    async (table, rollup) => {
      const columns = await columnsOf(table);
      const measures = new Set(['organization_guid', rollup.timeColumn, 'calls', 'errors', 'durations', 'request_bytes_sum', 'response_bytes_sum']);
      const keys = columns.filter((c) => !measures.has(c.name));
      expect(keys).toEqual(declared(rollup.keys));
      for (const key of rollup.keys) expect(GROUP_COLUMNS).toContain(key);
      expect(columns.find((c) => c.name === rollup.timeColumn)?.type).toBe("DateTime('UTC')");
      // The states the reports merge (usage-rollup-sql.ts) are the ones the table holds.
      expect(columns.find((c) => c.name === 'durations')?.type).toBe(`AggregateFunction(${USAGE_QUANTILES}, UInt32, UInt8)`);
    },
  );
});
