import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Gateway sessions ended by the host (DELETE): a session lives in its sealed id, so
  // ending it needs a record every replica can read. A row is kept until the session
  // would have expired anyway (expires_at), then pruned.
  await db.schema
    .createTable('ended_gateway_sessions')
    .addColumn('connection_guid', 'uuid', (c) => c.notNull().references('connections.guid').onDelete('cascade'))
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('ended_gateway_sessions_pk', ['connection_guid', 'session_id'])
    .execute();
  await db.schema.createIndex('ended_gateway_sessions_expiry_idx').on('ended_gateway_sessions').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ended_gateway_sessions').ifExists().execute();
}
