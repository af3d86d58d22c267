import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import { migrations } from '../../migrations/index.js';
import type { Database } from './schema.js';

export type ConfigDb = Kysely<Database>;

export interface PostgresStore {
  db: ConfigDb;
  kind: 'pglite' | 'postgres';
  close(): Promise<void>;
}

/**
 * Opens the configuration store: a Postgres server through `pg` when a URL is
 * given, otherwise PGlite (Postgres in WASM) with its data under `dataDir`.
 * Both run the same Kysely queries.
 */
export async function openPostgres(opts: {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** Told of a connection the server dropped (a restart, a failover, an idle timeout): the pool replaces it on demand. */
  onConnectionError?: (err: Error) => void;
}): Promise<PostgresStore> {
  if (opts.databaseUrl) {
    const { default: pg } = await import('pg');
    // Return int8 (counts) as numbers: no count here comes near 2^53.
    pg.types.setTypeParser(20, (v) => Number(v));
    // While the server is away a request waits at most connectionTimeoutMillis for a connection and query_timeout for
    // an answer, then fails (a 503) instead of hanging; keep-alive notices a server that vanished without a FIN.
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: 10,
      connectionTimeoutMillis: 5000,
      query_timeout: 30_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // A connection the server terminated emits 'error': on the pool when it was idle, on the client itself when it
    // was checked out between two statements (a transaction). Without a listener either would end the process.
    pool.on('error', (err) => opts.onConnectionError?.(err));
    pool.on('connect', (client) => client.on('error', (err) => opts.onConnectionError?.(err)));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const dir = path.join(opts.dataDir, 'pg');
  fs.mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir, {
    parsers: { 20: (v: string) => Number(v) },
  });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: 'pglite',
    close: async () => {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
  };
}

/** Applies every pending migration of migrations/ through Kysely's Migrator. Throws on the first failure. */
export async function migratePostgres(db: ConfigDb): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
  });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    throw new Error(`Postgres migration ${failed?.migrationName ?? '(unknown)'} failed: ${String(result.error)}`, {
      cause: result.error,
    });
  }
  return result;
}
