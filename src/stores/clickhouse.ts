import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { projectPath } from '../runtime/project-dir.js';

/**
 * The format a bulk insert body comes in: JSON lines, each row ending in '\n'. Not CSV:
 * ClickHouse's client, which chDB runs every statement through, reads test hints
 * (`-- { echo }`, `{ serverError 27 }`, `{ retry 1 until ... }`) in the comments of a
 * statement's whole text, and a backslash in a CSV field put its SQL lexer out of step
 * with the CSV quoting, so a call's own text could echo an insert into stdout or fail it
 * (docs/call-logs.md, "Call-log text read as test hints"). JSON escapes as the lexer
 * does. chDB's inserts now read their bodies from a file (chdbFileInsert), which the
 * client does not lex, and there JSON parses for the CPU CSV does.
 */
export type InsertFormat = 'JSONCompactEachRow';

/**
 * An INSERT's rows, encoded: a file that holds exactly them (a sealed spool segment, read
 * where it lies), or chunks in memory, in order, never joined first (joining a 50k-row
 * body cost the seed about 1.7 µs of the event loop a row: docs/call-logs.md, "Session 35").
 */
export type InsertBody = { file: string } | { chunks: readonly Buffer[] };

/** An INSERT whose rows are already encoded in `format`. */
export interface EncodedInsert {
  table: string;
  columns: readonly string[];
  format: InsertFormat;
  body: InsertBody;
  settings: Record<string, string | number>;
}

/** Runs an EncodedInsert; failures are @clickhouse/client errors (ClickHouseError when ClickHouse refused it). */
export type InsertEncoded = (insert: EncodedInsert) => Promise<void>;

export interface ClickhouseStore {
  client: ClickHouseClient;
  /** The bulk insert path: the body handed to chDB without a copy when embedded, the HTTP body for a server. */
  insertEncoded: InsertEncoded;
  /** The client whose connection insertEncoded runs on: `client` for a server, chDB's first insert connection when embedded. */
  insertClient: ClickHouseClient;
  /** How many inserts insertEncoded runs at once: a writer's lanes (SpoolWriterOptions.lanes). */
  insertLanes: number;
  kind: 'chdb' | 'server';
  /** Set when the DDL should be generated for a cluster (Replicated engines, Distributed tables). */
  cluster?: string | undefined;
  close(): Promise<void>;
}

export interface ClickhouseOptions {
  dataDir: string;
  server?: { url: string; username?: string | undefined; password?: string | undefined; database: string; cluster?: string | undefined } | undefined;
}

export class MissingChdbError extends Error {
  constructor(cause: unknown) {
    super(
      'Embedded ClickHouse needs the optional package "chdb", which is not installed. ' +
        'Either run `npm install chdb` (about 500 MB), or point the service at a ClickHouse server with CLICKHOUSE_URL.',
      { cause },
    );
  }
}

/**
 * Settings as a statement's own SETTINGS clause, the one way a statement carries them.
 * chDB's client connection turns a query's clickhouse_settings into session-wide SETs,
 * each run as a statement of its own ahead of the query: the bound or tag would outlive
 * the query (and reach the next one on that connection), and every SET is one more
 * statement to run (docs/call-logs.md, "Session 18"). Names and values are the code's
 * own, checked all the same; a text value is a tag or token (letters, digits, `_`, `.`, `:`,
 * `-`, spaces).
 */
export function settingsClause(settings: Readonly<Record<string, number | string>>): string {
  const items = Object.entries(settings).map(([name, value]) => {
    if (!/^[a-z_]+$/.test(name)) throw new Error(`bad ClickHouse setting ${name}`);
    if (typeof value === 'number' && Number.isFinite(value)) return `${name} = ${value}`;
    if (typeof value === 'string' && /^[\w.: -]*$/.test(value)) return `${name} = '${value}'`;
    throw new Error(`bad ClickHouse setting ${name}`);
  });
  return items.length ? `\nSETTINGS ${items.join(', ')}` : '';
}

/**
 * Opens the call-log store: a ClickHouse server over HTTP when configured, otherwise
 * chDB's in-process engine with its data under `dataDir`, both behind the same
 * @clickhouse/client API so every query is the same SQL.
 */
export async function openClickhouse(opts: ClickhouseOptions): Promise<ClickhouseStore> {
  if (opts.server) {
    const client = createClient({
      url: opts.server.url,
      username: opts.server.username ?? 'default',
      password: opts.server.password ?? '',
      database: opts.server.database,
      clickhouse_settings: { date_time_output_format: 'iso' },
      // Its failures reach the service as errors, which it logs or answers in its own words: the client's own log
      // printed each as a multi-line dump on stderr (a ClickHouse away at start-up was twenty lines before the reason).
      log: { level: ClickHouseLogLevel.OFF },
    });
    return {
      client,
      insertEncoded: clientInsert(client),
      insertClient: client,
      insertLanes: INSERT_LANES,
      kind: 'server',
      cluster: opts.server.cluster,
      close: () => client.close(),
    };
  }
  let createChdbConnection: (o: { path: string }) => unknown;
  let Session: ChdbSessionClass;
  try {
    ({ createChdbConnection } = (await import('chdb/connection' as string)) as { createChdbConnection: typeof createChdbConnection });
    ({ Session } = (await import('chdb' as string)) as { Session: ChdbSessionClass });
  } catch (err) {
    throw new MissingChdbError(err);
  }
  const dir = path.join(opts.dataDir, 'clickhouse');
  const bodies = path.join(opts.dataDir, 'clickhouse-inserts');
  fs.mkdirSync(dir, { recursive: true });
  // The engine takes its server settings from the first connection to the directory,
  // and chdb/connection's connections carry none: a bare session opened first does,
  // and stays open as long as the store.
  const engine = new Session(dir, { connectionArgs: [`--os_threads_nice_value_merge_mutate=${WRITE_NICE}`] });
  let connection: unknown;
  let inserts: unknown[];
  try {
    connection = createChdbConnection({ path: dir });
    // The writer's inserts get connections of their own, one per lane: a chDB connection
    // runs one statement at a time, so on the queries' connection a report or a page
    // waited for a whole segment's insert; on their own they run side by side, as on a
    // server (docs/call-logs.md, "inserts on a connection of their own").
    // The forwarder's horizon still sees the insert: system.processes lists every
    // connection's queries (test/forwarder.test.ts, "even while an INSERT runs").
    inserts = Array.from({ length: INSERT_LANES }, () => createChdbConnection({ path: dir }));
    // Emptied once the engine holds the directory: a body left there was a crashed process's (its rows are still spooled).
    fs.rmSync(bodies, { recursive: true, force: true });
    fs.mkdirSync(bodies, { recursive: true });
  } catch (err) {
    engine.close();
    throw err;
  }
  const client = createClient({ connection } as unknown as Parameters<typeof createClient>[0]);
  const insertClients = inserts.map((insert) => createClient({ connection: insert } as unknown as Parameters<typeof createClient>[0]));
  return {
    client,
    insertEncoded: chdbFileInsert(insertClients, bodies),
    insertClient: insertClients[0]!,
    insertLanes: insertClients.length,
    kind: 'chdb',
    close: async () => {
      for (const insertClient of insertClients) await insertClient.close();
      await client.close();
      engine.close();
    },
  };
}

/**
 * Reads before writes: in-process, the engine shares the service's cores, so the
 * writer's inserts, the rollup views they feed and the background merges run at this
 * Linux nice value, above the queries' 0, and a page or a report asked during a bulk
 * ingest waits less for it (docs/call-logs.md, "Reads before writes"). 10 leaves
 * writes about a tenth of a core a busy query also wants (19 measured no better); the
 * spool holds what they have not inserted yet. ClickHouse applies it only with
 * CAP_SYS_NICE, and changes nothing without.
 */
export const WRITE_NICE = 10;

/**
 * Inserts run at once, the call-log writer's lanes: one insert parses its body on one
 * thread while its views run on others, and left a core partly idle; a second beside it
 * seeded 22-28 % more rows a second on two cores, the same CPU a row (docs/call-logs.md,
 * "Two insert lanes"). On chDB each has a connection of its own (a connection runs one
 * statement at a time); a server's client has a pool.
 */
const INSERT_LANES = 2;

/** chdb's own Session, for the one connection that sets the engine's server settings. */
type ChdbSessionClass = new (path: string, opts: { connectionArgs: readonly string[] }) => { close(): void };

/**
 * The insert path on chDB: the statement reads its body from a file (`INSERT ... FROM
 * INFILE`): a spool segment's own, or one written under `dir` for chunks in memory, so the statement's text is a line
 * whatever the body. chDB's raw insert appended the body to the statement's text, which
 * ClickHouse's client then copied, lexed whole (for test hints) and scanned for the
 * data's end: a 50k-row body of call_logs into a Null table cost 10.5 µs of CPU a row
 * that way against 4.6 from a file (docs/call-logs.md, "Inserts from a file"); writing
 * the file costs about 0.2. Its errors are the client's ClickHouseError, as a server's are.
 *
 * Parallel parsing is off: in-process, the engine shares the service's cores, and
 * splitting a body across parser threads cost about 10 % more CPU per row than one
 * parser (chDB 3.4, 50k-row bodies; the writer overlaps inserts with producing anyway).
 * The rollup views of an insert run side by side instead of one after another: one
 * insert's views were a single thread's work while a core stood partly idle (about 15 %
 * more rows/s, the same CPU a row: docs/call-logs.md, "Session 12"). The insert's threads
 * and its views' run at WRITE_NICE. Inserts run on INSERT_LANES connections, each on an idle one.
 */
function chdbFileInsert(clients: readonly ClickHouseClient[], dir: string): InsertEncoded {
  let last = 0;
  const onIdleConnection = connectionLanes(clients);
  return async ({ table, columns, format, body, settings }) => {
    // A spool segment is read where it lies; chunks in memory get a file of their own.
    const file = 'file' in body ? body.file : path.join(dir, `${++last}.body`);
    if ('chunks' in body) await writeChunks(file, body.chunks);
    const insertSettings = {
      input_format_parallel_parsing: 0,
      parallel_view_processing: 1,
      os_threads_nice_value_query: WRITE_NICE,
      os_threads_nice_value_materialized_view: WRITE_NICE,
      ...settings,
    };
    try {
      await onIdleConnection((client) =>
        client.command({
          query: `INSERT INTO ${table} (${columns.join(', ')}) FROM INFILE ${sqlString(file)}${settingsClause(insertSettings)} FORMAT ${format}`,
        }),
      );
    } catch (err) {
      // chDB's connection throws @clickhouse/client-common's ClickHouseError, a class apart from the one
      // @clickhouse/client bundles (which the writer tells a refused segment by).
      const { message, code, type } = err as { message?: unknown; code?: unknown; type?: unknown };
      throw Object.assign(
        new ClickHouseError({ message: String(message ?? err), code: String(code ?? ''), type: typeof type === 'string' ? type : undefined }),
        { cause: err },
      );
    } finally {
      if ('chunks' in body) await fs.promises.rm(file, { force: true });
    }
  };
}

/** Writes `chunks` to a new file in one gathered write (libuv splits what IOV_MAX cannot take). */
async function writeChunks(file: string, chunks: readonly Buffer[]): Promise<void> {
  const handle = await fs.promises.open(file, 'w');
  try {
    const { bytesWritten } = await handle.writev(chunks as Buffer[]);
    const expected = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    if (bytesWritten !== expected) throw new Error(`${file}: ${bytesWritten} of ${expected} bytes written`);
  } finally {
    await handle.close();
  }
}

/** Runs each task on an idle one of `clients` (chDB connections, one statement at a time each), queued while all are busy. */
function connectionLanes(clients: readonly ClickHouseClient[]): <T>(task: (client: ClickHouseClient) => Promise<T>) => Promise<T> {
  const idle = [...clients];
  const waiting: ((client: ClickHouseClient) => void)[] = [];
  return async (task) => {
    const client = idle.pop() ?? (await new Promise<ClickHouseClient>((resolve) => waiting.push(resolve)));
    try {
      return await task(client);
    } finally {
      const next = waiting.shift();
      if (next) next(client);
      else idle.push(client);
    }
  };
}

/** `text` as a ClickHouse string literal (a file's path, a constant in generated SQL). */
export const sqlString = (text: string): string => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

/**
 * The same insert through @clickhouse/client's exec: the writer's path to a server, and
 * any small insert on either store (an alert). Its settings are the statement's own
 * (settingsClause): an insert_deduplication_token made a session-wide SET on chDB
 * would stick and drop later inserts as replays.
 */
export function clientInsert(client: Pick<ClickHouseClient, 'exec'>): InsertEncoded {
  return async ({ table, columns, format, body, settings }) => {
    const result = await client.exec({
      query: `INSERT INTO ${table} (${columns.join(', ')})${settingsClause(settings)} FORMAT ${format}`,
      values: 'file' in body ? fs.createReadStream(body.file) : Readable.from(body.chunks, { objectMode: false }),
    });
    result.stream.resume();
  };
}

const DDL_DIR = projectPath('clickhouse');

/** The DDL files of clickhouse/, in order (NNNN_name.sql). */
export function listDdlFiles(dir = DDL_DIR): { name: string; sql: string }[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort()
    .map((name) => ({ name, sql: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

/** Splits a DDL file into statements on `;` at the end of a line; comments are kept with their statement. */
export function splitStatements(sqlText: string): string[] {
  return sqlText
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s.replace(/--.*$/gm, '').trim().length > 0);
}

export interface DdlContext {
  /** Days after which call log rows are dropped (LOG_RETENTION_DAYS). */
  retentionDays: number;
  cluster?: string | undefined;
}

/**
 * Fills the placeholders of a DDL statement. Files are written for a single node;
 * `${ON_CLUSTER}`, `${ENGINE:Merge}` style markers switch them to a cluster.
 *
 * On a cluster, `${TABLE:name}` becomes `name_local` (the Replicated table on each
 * shard) and `${DISTRIBUTED:name:shardingKey}` becomes the Distributed table `name`
 * over those, so every query and insert keeps addressing `name`; `${DROP_DISTRIBUTED:name}`
 * drops it (before its local tables are rebuilt). On a single node the table is
 * `name` itself and both DISTRIBUTED statements render empty (skipped).
 */
export function renderDdl(statement: string, ctx: DdlContext): string {
  const cluster = ctx.cluster;
  return statement
    .replaceAll('${RETENTION_DAYS}', String(ctx.retentionDays))
    .replaceAll('${ON_CLUSTER}', cluster ? `ON CLUSTER ${cluster}` : '')
    .replace(/\$\{TABLE:(\w+)\}/g, (_m, table: string) => (cluster ? `${table}_local` : table))
    .replace(/\$\{DROP_DISTRIBUTED:(\w+)\}/g, (_m, table: string) => (cluster ? `DROP TABLE IF EXISTS ${table} ON CLUSTER ${cluster} SYNC` : ''))
    .replace(/\$\{DISTRIBUTED:(\w+):([^}]+)\}/g, (_m, table: string, shardingKey: string) =>
      cluster
        ? `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER ${cluster} AS ${table}_local ENGINE = Distributed(${cluster}, currentDatabase(), ${table}_local, ${shardingKey})`
        : '',
    )
    .replace(/\$\{ENGINE:(\w+)\}/g, (_m, engine: string) =>
      cluster ? `Replicated${engine}('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')` : engine,
    );
}

/** Every statement of the DDL files rendered for `ctx`, empty ones dropped: what migrateClickhouse runs. */
export function renderDdlFile(sqlText: string, ctx: DdlContext): string[] {
  return splitStatements(sqlText)
    .map((statement) => renderDdl(statement, ctx))
    .filter((statement) => statement.replace(/--.*$/gm, '').trim().length > 0);
}

/**
 * Applies the DDL files of clickhouse/ not yet recorded in `schema_migrations`,
 * in order, recording each after it succeeds.
 */
export async function migrateClickhouse(store: ClickhouseStore, ctx: DdlContext, dir = DDL_DIR): Promise<string[]> {
  const { client } = store;
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations ${ctx.cluster ? `ON CLUSTER ${ctx.cluster}` : ''} (name String, applied_at DateTime64(3) DEFAULT now64(3)) ENGINE = ${ctx.cluster ? "ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')" : 'MergeTree'} ORDER BY name`,
  });
  const appliedRows = await (await client.query({ query: 'SELECT name FROM schema_migrations', format: 'JSONEachRow' })).json<{ name: string }>();
  const applied = new Set(appliedRows.map((r) => r.name));
  const done: string[] = [];
  for (const file of listDdlFiles(dir)) {
    if (applied.has(file.name)) continue;
    for (const statement of renderDdlFile(file.sql, ctx)) {
      await client.command({ query: statement });
    }
    await client.insert({ table: 'schema_migrations', values: [{ name: file.name }], format: 'JSONEachRow' });
    done.push(file.name);
  }
  return done;
}
