import { sql } from 'kysely';
import type { ConfigDb } from './postgres.js';

/** Configuration stores on PGlite: this process's alone, through one connection. */
const embedded = new WeakSet<ConfigDb>();

/** Called by openPostgres for a store on PGlite. */
export function markEmbedded(db: ConfigDb): void {
  embedded.add(db);
}

/**
 * How long a process waits for another's lock before the wait fails: less than the
 * pool's query_timeout (30 s), so that the server ends the wait and the connection
 * comes back clean, not the client in the middle of a statement.
 */
export const STORE_LOCK_WAIT_MS = 25_000;

/**
 * Runs `work` as the only holder of `key` among every process on the store. On a
 * Postgres server: in a transaction that holds pg_advisory_xact_lock on the key's hash
 * (released at its end, also when the process dies), `work` given that transaction,
 * so that what it reads and writes goes through the connection holding the lock (no
 * second connection from the pool while it waits for an answer). On PGlite no other
 * process shares the store, and a transaction kept open would stall every other query
 * of this one (it has one connection): `work` runs on the store as it is, and the
 * caller's in-process guard is the only lock needed.
 */
export async function withStoreLock<T>(db: ConfigDb, key: string, work: (db: ConfigDb) => Promise<T>): Promise<T> {
  if (embedded.has(db)) return work(db);
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('lock_timeout', ${`${STORE_LOCK_WAIT_MS}ms`}, true)`.execute(trx);
    await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
    return work(trx);
  });
}
