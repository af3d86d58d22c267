import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // When a session was ended, by the store's clock: each replica reads the ends since its
  // last read, in one query for all the sessions it serves, instead of one query per
  // session and cache TTL (src/gateway/ended-sessions.ts).
  await db.schema
    .alterTable('ended_gateway_sessions')
    .addColumn('ended_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('ended_gateway_sessions_ended_idx').on('ended_gateway_sessions').column('ended_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('ended_gateway_sessions_ended_idx').ifExists().execute();
  await db.schema.alterTable('ended_gateway_sessions').dropColumn('ended_at').execute();
}
