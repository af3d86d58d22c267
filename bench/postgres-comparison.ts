/**
 * The Postgres side of the benches that compare the call log with "the store every
 * peer uses" (bench:logs, bench:usage): the rows ClickHouse holds, copied into a
 * Postgres table with the indexes a deployment would create, on a Postgres server or
 * on PGlite (Postgres in WebAssembly, in this process).
 */
import path from 'node:path';
import pg from 'pg';
import type { ClickhouseStore } from '../src/stores/clickhouse.js';

/** A Postgres connection that runs one statement and returns its rows. */
export interface ComparisonPostgres {
  /** 'server' (a Postgres server through pg) or 'PGlite' (in this process, under the bench's data directory). */
  kind: 'server' | 'PGlite';
  /** What to print: the server's address and database, or PGlite. */
  label: string;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Closes the connections; on a server, drops the database (gigabytes at 10M rows). */
  close(): Promise<void>;
}

/**
 * A fresh database named `database`: on the server at `url` (dropped and created again,
 * through `connections` pooled connections so independent queries can run side by side), or,
 * without a url, a PGlite database under `dataDir`.
 */
export async function openComparisonPostgres(opts: {
  url?: string | undefined;
  database: string;
  dataDir: string;
  connections?: number;
}): Promise<ComparisonPostgres> {
  if (!opts.url) {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = await PGlite.create(path.join(opts.dataDir, `pg-${opts.database}`), { parsers: { 20: (v: string) => Number(v) } });
    return {
      kind: 'PGlite',
      label: 'PGlite (Postgres 17 in WebAssembly, one connection, in the bench process)',
      query: async <T>(sql: string, params?: unknown[]) => (await db.query<T>(sql, params)).rows,
      close: () => db.close(),
    };
  }
  const onServer = async (sql: string) => {
    const admin = new pg.Client({ connectionString: opts.url });
    await admin.connect();
    await admin.query(sql);
    await admin.end();
  };
  await onServer(`DROP DATABASE IF EXISTS ${opts.database}`);
  await onServer(`CREATE DATABASE ${opts.database}`);
  const url = new URL(opts.url);
  url.pathname = `/${opts.database}`;
  const pool = new pg.Pool({ connectionString: url.href, max: opts.connections ?? 1 });
  const version = (await pool.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
  return {
    kind: 'server',
    label: `Postgres ${version} server at ${url.host}, database ${opts.database}`,
    query: async <T>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as T[],
    close: async () => {
      await pool.end();
      await onServer(`DROP DATABASE IF EXISTS ${opts.database}`);
    },
  };
}

const COLUMNS = [
  ['organization_guid', 'uuid NOT NULL'],
  ['guid', 'uuid NOT NULL'],
  ['created_at', 'timestamptz NOT NULL'],
  ['type', 'text NOT NULL'],
  ['method', 'text NOT NULL'],
  ['tool_name', 'text'],
  ['status', 'text NOT NULL'],
  ['error_message', 'text'],
  ['duration_ms', 'int NOT NULL'],
  ['request_bytes', 'int NOT NULL'],
  ['response_bytes', 'int NOT NULL'],
  ['gateway_connection_guid', 'uuid'],
  ['user_guid', 'uuid'],
  ['outbound_gateway_guid', 'uuid'],
  ['inbound_server_guid', 'uuid'],
  ['host_guid', 'uuid'],
  ['server_container_guid', 'uuid'],
  ['team_guid', 'uuid'],
  ['trace_id', 'text NOT NULL'],
  ['span_id', 'text NOT NULL'],
] as const;

/** The indexes a careful deployment creates for the call log: tenant and time, tenant, filter and time for the main filters, trace id. */
const INDEXES = [
  'CREATE INDEX ON call_logs (organization_guid, created_at DESC, guid DESC)',
  'CREATE INDEX ON call_logs (organization_guid, user_guid, created_at DESC)',
  'CREATE INDEX ON call_logs (organization_guid, inbound_server_guid, created_at DESC)',
  'CREATE INDEX ON call_logs (organization_guid, gateway_connection_guid, created_at DESC)',
  'CREATE INDEX ON call_logs (organization_guid, outbound_gateway_guid, created_at DESC)',
  'CREATE INDEX ON call_logs (trace_id)',
];

/**
 * Copies every call-log row ClickHouse holds (all workspaces) into an UNLOGGED
 * `call_logs` table (and `call_log_details` when `details`), then builds the indexes
 * and analyzes. Returns the rows copied and the seconds spent loading and indexing.
 */
export async function copyCallLogsToPostgres(
  db: ComparisonPostgres,
  clickhouse: Pick<ClickhouseStore, 'client'>,
  opts: { details: boolean },
): Promise<{ rows: number; loadSeconds: number; indexSeconds: number }> {
  const started = performance.now();
  const ch = clickhouse.client;
  await db.query(`CREATE UNLOGGED TABLE call_logs (${COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ')})`);
  if (opts.details)
    await db.query(
      `CREATE UNLOGGED TABLE call_log_details (guid uuid PRIMARY KEY, request_body text, response_body text, request_headers text, response_headers text)`,
    );
  const names = COLUMNS.map(([name]) => name);
  const types = COLUMNS.map(([, type]) => type.split(' ')[0]!);
  const nil = (v: unknown) => (v === '' ? null : v);
  const bounds = (
    await (
      await ch.query({
        query: `SELECT toUnixTimestamp64Milli(min(created_at)) AS lo, toUnixTimestamp64Milli(max(created_at)) AS hi FROM call_logs`,
        format: 'JSONEachRow',
      })
    ).json<{ lo: string | number; hi: string | number }>()
  )[0]!;
  // Six-hour slices: fewer round trips than hourly ones (the per-slice overhead dominated at 1M rows).
  const step = 6 * 3_600_000;
  const created = names.indexOf('created_at');
  let copied = 0;
  for (let from = Number(bounds.lo); from <= Number(bounds.hi); from += step) {
    const slice = `created_at >= fromUnixTimestamp64Milli({a:Int64}, 'UTC') AND created_at < fromUnixTimestamp64Milli({b:Int64}, 'UTC')`;
    const rows = await (
      await ch.query({
        query: `SELECT ${names.join(', ').replace('created_at', 'toUnixTimestamp64Milli(created_at)')} FROM call_logs WHERE ${slice}`,
        query_params: { a: from, b: from + step },
        format: 'JSONCompactEachRow',
      })
    ).json<unknown[]>();
    for (let i = 0; i < rows.length; i += 20_000) {
      const chunk = rows.slice(i, i + 20_000);
      const arrays = types.map((_, c) => chunk.map((r) => (c === created ? new Date(Number(r[c])).toISOString() : nil(r[c]))));
      await db.query(`INSERT INTO call_logs SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`, arrays);
    }
    if (opts.details) {
      const det = await (
        await ch.query({
          query: `SELECT guid, request_body, response_body, request_headers, response_headers FROM call_log_details WHERE ${slice}`,
          query_params: { a: from, b: from + step },
          format: 'JSONCompactEachRow',
        })
      ).json<string[]>();
      if (det.length)
        await db.query(
          `INSERT INTO call_log_details SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])`,
          [0, 1, 2, 3, 4].map((c) => det.map((r) => r[c])),
        );
    }
    copied += rows.length;
  }
  const loaded = performance.now();
  for (const ddl of [...INDEXES, 'ANALYZE call_logs', ...(opts.details ? ['ANALYZE call_log_details'] : [])]) await db.query(ddl);
  return { rows: copied, loadSeconds: (loaded - started) / 1000, indexSeconds: (performance.now() - loaded) / 1000 };
}

/** Bytes of `call_logs` with its indexes (and TOAST) on disk. */
export async function postgresCallLogsBytes(db: ComparisonPostgres): Promise<number> {
  return Number((await db.query<{ b: string | number }>(`SELECT pg_total_relation_size('call_logs') AS b`))[0]!.b);
}
