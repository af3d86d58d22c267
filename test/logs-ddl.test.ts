import { describe, expect, it } from 'vitest';
import { listDdlFiles, renderDdlFile } from '../src/stores/clickhouse.js';

/** The cluster variant (CLICKHOUSE_CLUSTER) is checked by its generated DDL: no cluster runs here. */
const files = listDdlFiles();
const render = (cluster?: string) => files.flatMap((f) => renderDdlFile(f.sql, { retentionDays: 30, cluster }));
/** A statement without its comments, on one line. */
const bare = (s: string) => s.replace(/--.*$/gm, '').replace(/\s+/g, ' ').trim();
const creates = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('CREATE'));
const alters = (cluster?: string) => render(cluster).filter((s) => bare(s).startsWith('ALTER'));

describe('ClickHouse DDL', () => {
  it("ships the call_logs, call_log_details and alerts tables in order, then the forwarder's ingest order", () => {
    expect(files.map((f) => f.name)).toEqual(['0001_call_logs.sql', '0002_call_log_details.sql', '0003_alerts.sql', '0004_forwarder_ingest_order.sql']);
  });

  it('renders single-node tables with MergeTree, the retention TTL and no placeholder left', () => {
    const sql = creates();
    expect(sql).toHaveLength(3);
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
    const sql = creates('logs_cluster');
    expect(sql).toHaveLength(6);
    for (const table of ['call_logs', 'call_log_details', 'alerts']) {
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
    expect(alters().map(bare)).toEqual([
      'ALTER TABLE call_logs MODIFY COLUMN ingested_at DEFAULT now64(3)',
      'ALTER TABLE call_logs MODIFY COLUMN ingested_at DEFAULT now64(3)',
      `ALTER TABLE call_logs ${projection}`,
      'ALTER TABLE call_logs MATERIALIZE PROJECTION forwarder_order',
    ]);
    // On a cluster the Replicated local tables get the default and the projection; the
    // Distributed table, which fills the defaults of the rows inserted through it, the default.
    expect(alters('logs_cluster').map(bare)).toEqual([
      'ALTER TABLE call_logs_local ON CLUSTER logs_cluster MODIFY COLUMN ingested_at DEFAULT now64(3)',
      'ALTER TABLE call_logs ON CLUSTER logs_cluster MODIFY COLUMN ingested_at DEFAULT now64(3)',
      `ALTER TABLE call_logs_local ON CLUSTER logs_cluster ${projection}`,
      'ALTER TABLE call_logs_local ON CLUSTER logs_cluster MATERIALIZE PROJECTION forwarder_order',
    ]);
  });
});
