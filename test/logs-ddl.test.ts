import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_LOG_SCHEMA, DETAIL_COLUMNS, GROUP_COLUMNS, THIN_COLUMNS, type ColumnSpec } from '../src/core/logs/call-log-schema.js';
import { USAGE_ROLLUPS } from '../src/core/logs/usage-rollups.js';
import {
  BUCKET_COUNTS_OF_ROWS,
  DURATION_BUCKET_SQL,
  DURATION_BUCKETS,
  DURATION_STATE_TYPE,
  durationOfBucket,
  ROLLUP_STATE_NAMES,
  usageMeasuresOfBuckets,
  usageMeasuresOfStates,
} from '../src/stores/usage-rollup-sql.js';
import { listDdlFiles, renderDdlFile } from '../src/stores/clickhouse.js';
import { DERIVED_ROLLUPS, type DerivedRollup } from './helpers/derived-rollups.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

/** The cluster variant (CLICKHOUSE_CLUSTER) is checked by its generated DDL: no cluster runs here. */
const files = listDdlFiles();
const render = (cluster?: string) => files.flatMap((f) => renderDdlFile(f.sql, { retentionDays: 30, cluster }));
/** A statement without its comments, on one line. */
const bare = (s: string) => s.replace(/--.*$/gm, '').replace(/\s+/g, ' ').trim();
const creates = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('CREATE'));
/** The CREATEs of the four log tables (and their Distributed tables), without the usage rollups, the trace hours (0021) and their views or call_logs made again (0020). */
const logTables = (cluster?: string) =>
  creates(cluster).filter((s) => !s.includes('call_log_usage_') && !s.includes('call_logs_rebuilt') && !s.includes('call_log_trace_hours'));
const alters = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('ALTER'));
/** The ALTERs of one DDL file. */
const altersOf = (name: string, cluster?: string) =>
  renderDdlFile(files.find((f) => f.name === name)!.sql, { retentionDays: 30, cluster }).filter((s) => bare(s).startsWith('ALTER'));
/** The ALTERs of clickhouse/0004 (the forwarder's ingest order). */
const ingestOrderAlters = (cluster?: string) => altersOf('0004_forwarder_ingest_order.sql', cluster);

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
      '0011_call_log_usage_duration_buckets.sql',
      '0012_call_log_usage_granules.sql',
      '0013_call_log_usage_hourly_tools.sql',
      '0014_call_log_storage.sql',
      '0015_call_log_usage_summaries.sql',
      '0016_call_log_usage_weekly_people.sql',
      '0017_call_log_parent_span.sql',
      '0018_call_log_error_type.sql',
      '0019_forwarder_counts.sql',
      '0020_call_log_granules.sql',
      '0021_call_log_trace_hours.sql',
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

  /** The rollups 0011 and 0012 build: each one's source, its time column and grouping keys. */
  const ROLLUPS = [
    { table: 'call_log_usage_hourly', source: 'call_logs' },
    { table: 'call_log_usage_daily', source: 'call_log_usage_hourly' },
    { table: 'call_log_usage_minute', source: 'call_logs' },
    { table: 'call_log_usage_hourly_people', source: 'call_logs' },
    { table: 'call_log_usage_daily_people', source: 'call_log_usage_hourly_people' },
  ];
  /** The files that build every rollup again: with bucket counts (0011), with small granules and the minute rollup by gateway (0012). */
  const rebuilding = (name: string) => (cluster?: string) => renderDdlFile(files.find((f) => f.name === name)!.sql, { retentionDays: 30, cluster }).map(bare);
  const ofGranules = rebuilding('0012_call_log_usage_granules.sql');

  /**
   * A rollup a file builds again on a cluster: its Distributed table dropped before its
   * local one, the local one made Replicated, the Distributed one made after it, and each
   * shard's view reading its local rows (or local finer rollup) into its local rollup.
   */
  function expectRebuiltOnEveryShard(sql: string[], { table, source }: { table: string; source: string }) {
    const dropDistributed = sql.indexOf(`DROP TABLE IF EXISTS ${table} ON CLUSTER logs_cluster SYNC`);
    const dropLocal = sql.indexOf(`DROP TABLE IF EXISTS ${table}_local ON CLUSTER logs_cluster SYNC`);
    const create = sql.findIndex((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS ${table}_local ON CLUSTER logs_cluster`));
    const distributed = sql.indexOf(
      `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER logs_cluster AS ${table}_local ENGINE = Distributed(logs_cluster, currentDatabase(), ${table}_local, cityHash64(organization_guid))`,
    );
    expect([dropDistributed, dropLocal, create, distributed].every((i) => i >= 0)).toBe(true);
    expect(dropDistributed).toBeLessThan(dropLocal);
    expect(dropLocal).toBeLessThan(create);
    expect(create).toBeLessThan(distributed);
    expect(sql[create]).toMatch(/ENGINE = ReplicatedAggregatingMergeTree\(/);
    expect(sql.find((s) => s.includes(`TO ${table}_local AS`))).toMatch(
      new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv_local ON CLUSTER logs_cluster TO ${table}_local AS SELECT .*${source}_local GROUP BY`),
    );
  }

  describe.each(['0011_call_log_usage_duration_buckets.sql', '0012_call_log_usage_granules.sql'])('%s', (name) => {
    const ofBuckets = rebuilding(name);

    it('builds every usage rollup again with bucket counts: its views dropped first, then its tables, each rebuilt, fed and backfilled', () => {
      const sql = ofBuckets();
      const firstCreate = sql.findIndex((s) => s.startsWith('CREATE'));
      // Nothing feeds a table while it is rebuilt, and the file can run again: every drop comes first.
      expect(sql.slice(0, firstCreate).every((s) => /^DROP (VIEW|TABLE) IF EXISTS call_log_usage_\w+ SYNC$/.test(s.replace(/\s+SYNC/, ' SYNC')))).toBe(true);
      expect(sql.slice(firstCreate).some((s) => s.startsWith('DROP'))).toBe(false);
      expect(ROLLUPS.map((r) => r.table).every((t) => sql.includes(`DROP TABLE IF EXISTS ${t} SYNC`))).toBe(true);
      for (const view of [
        'call_log_usage_hourly_mv',
        'call_log_usage_daily_mv',
        'call_log_usage_minute_mv',
        'call_log_usage_daily_people_mv',
        'call_log_usage_hourly_people_mv',
      ])
        expect(sql).toContain(`DROP VIEW IF EXISTS ${view} SYNC`);
      for (const { table, source } of ROLLUPS) {
        const own = sql.slice(firstCreate).filter((s) => new RegExp(`^(CREATE TABLE IF NOT EXISTS|INSERT INTO) ${table}\\b|TO ${table} AS`).test(s));
        expect(own).toHaveLength(3);
        expect(own[0]).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS ${table} \\(.*\\) ENGINE = AggregatingMergeTree .* TTL \\w+ \\+ INTERVAL 30 DAY`));
        expect(own[0]).toContain(`durations ${DURATION_STATE_TYPE}`);
        expect(own[1]).toMatch(new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS SELECT .* FROM \\(?.*${source} GROUP BY`));
        expect(own[2]).toMatch(new RegExp(`^INSERT INTO ${table} SELECT .* FROM \\(?.*${source} GROUP BY`));
        // The view and the backfill make the states as the reports' raw reads and rollup reads do.
        for (const s of own.slice(1))
          if (source === 'call_logs') {
            expect(s).toContain(bare(BUCKET_COUNTS_OF_ROWS));
            expect(s).toContain(bare(usageMeasuresOfBuckets(ROLLUP_STATE_NAMES, 'states')));
          } else expect(s).toContain(bare(usageMeasuresOfStates(ROLLUP_STATE_NAMES, 'states')));
      }
    });

    it('builds the rollups again on every shard: Replicated local tables and views, the Distributed tables dropped and made again', () => {
      const sql = ofBuckets('logs_cluster');
      for (const rollup of ROLLUPS) expectRebuiltOnEveryShard(sql, rollup);
      for (const s of sql) expect(s).not.toMatch(/\$\{/);
    });
  });

  it('sorts the minute rollup by gateway before minute and gives every rollup 256-row granules (0012)', () => {
    for (const cluster of [undefined, 'logs_cluster']) {
      const tables = ofGranules(cluster).filter((s) => s.startsWith('CREATE TABLE') && s.includes('AggregatingMergeTree'));
      expect(tables).toHaveLength(ROLLUPS.length);
      for (const s of tables) expect(s).toMatch(/ SETTINGS ttl_only_drop_parts = 1, index_granularity = 256$/);
      expect(tables.find((s) => /^CREATE TABLE IF NOT EXISTS call_log_usage_minute(_local)? /.test(s))).toContain(
        'ORDER BY (organization_guid, outbound_gateway_guid, minute)',
      );
    }
  });

  /**
   * The rollups of one file (single node): every view, then every table dropped first,
   * then each one made, fed by its source's inserts and backfilled from it, the states
   * made as the reports merge them.
   */
  function expectDerivedRollups(sql: string[], derived: readonly DerivedRollup[]) {
    const firstCreate = sql.findIndex((s) => s.startsWith('CREATE'));
    expect(sql.slice(0, firstCreate)).toEqual([
      ...derived.map(({ table }) => `DROP VIEW IF EXISTS ${table}_mv SYNC`),
      ...derived.map(({ table }) => `DROP TABLE IF EXISTS ${table} SYNC`),
    ]);
    expect(sql.slice(firstCreate)).toHaveLength(3 * derived.length);
    for (const { table, source, time, keys, timeFrom } of derived) {
      const own = sql.slice(firstCreate).filter((s) => new RegExp(`^(CREATE TABLE IF NOT EXISTS|INSERT INTO) ${table} |TO ${table} AS`).test(s));
      expect(own).toHaveLength(3);
      const [create, view, backfill] = own;
      expect(create).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS ${table} \\(.*\\) ENGINE = AggregatingMergeTree .* TTL ${time} \\+ INTERVAL 30 DAY`));
      expect(create).toContain(`durations ${DURATION_STATE_TYPE}`);
      expect(create).toContain(`ORDER BY (${['organization_guid', time, ...keys].join(', ')})`);
      expect(create).toMatch(/ SETTINGS ttl_only_drop_parts = 1, index_granularity = 256$/);
      const groupBy = `GROUP BY ${['organization_guid', time, ...keys].join(', ')}`;
      expect(view).toMatch(new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS SELECT .* FROM ${source} ${groupBy}$`));
      expect(backfill).toMatch(new RegExp(`^INSERT INTO ${table} SELECT .* FROM ${source} ${groupBy}( SETTINGS [^()]*)?$`));
      for (const s of [view!, backfill!]) {
        expect(s).toContain(bare(usageMeasuresOfStates(ROLLUP_STATE_NAMES, 'states')));
        if (timeFrom) expect(s).toContain(`${timeFrom} AS ${time}`);
      }
    }
  }

  describe.each(Object.entries(DERIVED_ROLLUPS).map(([file, derived]) => ({ file, derived })))('$file', ({ file, derived }) => {
    const ofFile = rebuilding(file);

    it('builds each rollup from the one whose inserts feed it: every view and table dropped first, then each made, fed and backfilled', () => {
      expectDerivedRollups(ofFile(), derived);
    });

    it('on a cluster: Replicated local tables fed by the local rollups, and Distributed tables over them', () => {
      const sql = ofFile('logs_cluster');
      for (const rollup of derived) expectRebuiltOnEveryShard(sql, rollup);
      for (const s of sql) expect(s).not.toMatch(/\$\{/);
    });
  });

  it('stores call_logs smaller (0014): session_id as a dictionary, ZSTD guids, a finer trace filter, the forwarder projection without created_at', () => {
    const projection =
      'ADD PROJECTION IF NOT EXISTS forwarder_order ( SELECT organization_guid, ingested_at, toString(guid) ORDER BY organization_guid, ingested_at, toString(guid) )';
    const statements = (table: string, distributed: string) => [
      `ALTER TABLE ${table} MODIFY COLUMN session_id LowCardinality(String) CODEC(ZSTD(1))`,
      `ALTER TABLE ${distributed} MODIFY COLUMN session_id LowCardinality(String) CODEC(ZSTD(1))`,
      `ALTER TABLE ${table} MODIFY COLUMN guid UUID CODEC(ZSTD(1))`,
      `ALTER TABLE ${table} DROP INDEX IF EXISTS idx_trace_id`,
      `ALTER TABLE ${table} ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1 FIRST`,
      `ALTER TABLE ${table} MATERIALIZE INDEX idx_trace_id`,
      `ALTER TABLE ${table} DROP PROJECTION IF EXISTS forwarder_order`,
      `ALTER TABLE ${table} ${projection}`,
      `ALTER TABLE ${table} MATERIALIZE PROJECTION forwarder_order`,
    ];
    expect(altersOf('0014_call_log_storage.sql').map(bare)).toEqual(statements('call_logs', 'call_logs'));
    // On a cluster the Replicated local tables change; the Distributed table takes the column's new type.
    expect(altersOf('0014_call_log_storage.sql', 'logs_cluster').map(bare)).toEqual(
      statements('call_logs_local ON CLUSTER logs_cluster', 'call_logs ON CLUSTER logs_cluster'),
    );
  });

  it("counts the forwarder's rows per INSERT (0019): the counting projection added and built before forwarder_order goes, on one node and on every shard", () => {
    const statements = (table: string) => [
      `ALTER TABLE ${table} ADD PROJECTION IF NOT EXISTS forwarder_counts ( SELECT organization_guid, ingested_at, count() GROUP BY organization_guid, ingested_at )`,
      `ALTER TABLE ${table} MATERIALIZE PROJECTION forwarder_counts`,
      `ALTER TABLE ${table} DROP PROJECTION IF EXISTS forwarder_order`,
    ];
    expect(altersOf('0019_forwarder_counts.sql').map(bare)).toEqual(statements('call_logs'));
    expect(altersOf('0019_forwarder_counts.sql', 'logs_cluster').map(bare)).toEqual(statements('call_logs_local ON CLUSTER logs_cluster'));
  });

  it('makes call_logs again in 2,048-row granules with the pair filter (0020): built beside it, given its parts, exchanged, its trace and span filters per 8,192 rows, on one node and on every shard', () => {
    const statements = (table: string, rebuilt: string, onCluster: string, engine: string) => [
      `ALTER TABLE ${table}${onCluster} ADD INDEX IF NOT EXISTS idx_user_server cityHash64(user_guid, inbound_server_guid) TYPE bloom_filter(0.01) GRANULARITY 1`,
      `DROP TABLE IF EXISTS ${rebuilt}${onCluster} SYNC`,
      `CREATE TABLE IF NOT EXISTS ${rebuilt}${onCluster} AS ${table} ENGINE = ${engine} PARTITION BY toMonday(created_at) ORDER BY (organization_guid, created_at, guid) ` +
        'TTL toDateTime(created_at) + INTERVAL 30 DAY SETTINGS ttl_only_drop_parts = 1, non_replicated_deduplication_window = 10000, index_granularity = 2048, min_compress_block_size = 16384',
      `ALTER TABLE ${rebuilt}${onCluster} ATTACH PARTITION ALL FROM ${table}`,
      `EXCHANGE TABLES ${table} AND ${rebuilt}${onCluster}`,
      `DROP TABLE IF EXISTS ${rebuilt}${onCluster} SYNC`,
      `ALTER TABLE ${table}${onCluster} MATERIALIZE INDEX idx_user_server`,
      `ALTER TABLE ${table}${onCluster} DROP INDEX IF EXISTS idx_trace_id`,
      `ALTER TABLE ${table}${onCluster} ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 4 FIRST`,
      `ALTER TABLE ${table}${onCluster} MATERIALIZE INDEX idx_trace_id SETTINGS mutations_sync = 2`,
      `ALTER TABLE ${table}${onCluster} DROP INDEX IF EXISTS idx_span_id`,
      `ALTER TABLE ${table}${onCluster} ADD INDEX IF NOT EXISTS idx_span_id span_id TYPE bloom_filter(0.01) GRANULARITY 4 AFTER idx_trace_id`,
      `ALTER TABLE ${table}${onCluster} MATERIALIZE INDEX idx_span_id SETTINGS mutations_sync = 2`,
    ];
    const file = (cluster?: string) => renderDdlFile(files.find((f) => f.name === '0020_call_log_granules.sql')!.sql, { retentionDays: 30, cluster }).map(bare);
    expect(file()).toEqual(statements('call_logs', 'call_logs_rebuilt', '', 'MergeTree'));
    expect(file('logs_cluster')).toEqual(
      statements(
        'call_logs_local',
        'call_logs_rebuilt_local',
        ' ON CLUSTER logs_cluster',
        "ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')",
      ),
    );
  });

  it("keeps each trace's hours (0021): the table, its view from call_logs' inserts, the backfill through the names the queries use, the trace filter dropped, on one node and on every shard", () => {
    const file = (cluster?: string) =>
      renderDdlFile(files.find((f) => f.name === '0021_call_log_trace_hours.sql')!.sql, { retentionDays: 30, cluster }).map(bare);
    const table = (name: string, onCluster: string, engine: string) =>
      `CREATE TABLE IF NOT EXISTS ${name}${onCluster} ( organization_guid LowCardinality(String), trace_hash UInt32 CODEC(Delta, ZSTD(1)), hour DateTime('UTC') CODEC(T64, ZSTD(1)) ) ` +
      `ENGINE = ${engine} PARTITION BY toMonday(hour) ORDER BY (organization_guid, trace_hash, hour) TTL hour + INTERVAL 30 DAY + INTERVAL 7 DAY SETTINGS ttl_only_drop_parts = 1`;
    const view = (suffix: string, onCluster: string) =>
      `CREATE MATERIALIZED VIEW IF NOT EXISTS call_log_trace_hours_mv${suffix}${onCluster} TO call_log_trace_hours${suffix} AS ` +
      `SELECT organization_guid, xxHash32(trace_id) AS trace_hash, toStartOfHour(created_at) AS hour FROM call_logs${suffix}`;
    const backfill =
      'INSERT INTO call_log_trace_hours SELECT organization_guid, xxHash32(trace_id) AS trace_hash, toStartOfHour(created_at) AS hour FROM call_logs SETTINGS distributed_foreground_insert = 1';
    expect(file()).toEqual([
      table('call_log_trace_hours', '', 'ReplacingMergeTree'),
      view('', ''),
      backfill,
      'ALTER TABLE call_logs DROP INDEX IF EXISTS idx_trace_id',
    ]);
    const onCluster = ' ON CLUSTER logs_cluster';
    expect(file('logs_cluster')).toEqual([
      table('call_log_trace_hours_local', onCluster, "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')"),
      view('_local', onCluster),
      `CREATE TABLE IF NOT EXISTS call_log_trace_hours${onCluster} AS call_log_trace_hours_local ENGINE = Distributed(logs_cluster, currentDatabase(), call_log_trace_hours_local, cityHash64(organization_guid))`,
      // Through the Distributed tables: every shard's rows, not only those of the node applying the file.
      backfill,
      `ALTER TABLE call_logs_local${onCluster} DROP INDEX IF EXISTS idx_trace_id`,
    ]);
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

  it('buckets a duration as the rollups do: exact below 32 ms, else a bucket whose duration is within 1/32 of it, up to the largest UInt32', async () => {
    const durations = [0, 1, 31, 32, 33, 47, 63, 64, 65, 100, 999, 1000, 1024, 30_000, 30_049, 600_000, 123_456_789, 4_294_967_295];
    for (let i = 0; i < 200; i++) durations.push(Math.floor(Math.exp(Math.random() * 22)));
    const result = await t.runtime.services.clickhouse.client.query({
      query: `SELECT duration_ms, ${DURATION_BUCKET_SQL} AS bucket FROM (SELECT arrayJoin({d:Array(UInt32)}) AS duration_ms)`,
      query_params: { d: durations },
      format: 'JSONEachRow',
    });
    const rows = await result.json<{ duration_ms: number; bucket: number }>();
    expect(rows).toHaveLength(durations.length);
    for (const { duration_ms: d, bucket } of rows) {
      expect(bucket).toBeLessThan(DURATION_BUCKETS);
      if (d < 32) expect(durationOfBucket(bucket)).toBe(d);
      else expect(Math.abs(durationOfBucket(bucket) - d) / d, `${d} ms in bucket ${bucket}`).toBeLessThanOrEqual(1 / 32);
    }
    // The largest bucket is the largest UInt32's.
    expect(rows.find((r) => r.duration_ms === 4_294_967_295)!.bucket).toBe(DURATION_BUCKETS - 1);
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
      expect(columns.find((c) => c.name === 'durations')?.type).toBe(DURATION_STATE_TYPE);
    },
  );
});
