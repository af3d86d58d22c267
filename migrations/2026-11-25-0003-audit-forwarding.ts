import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Admin audit records are forwarded to the logs collector with a cursor of their own
  // (signal 'audit', contract 8.4). A workspace that configured a logs collector before
  // gets one, starting where its logs cursor started: audit records ingested since the
  // logs collector was configured are delivered, none from before.
  await sql`
    INSERT INTO forwarder_cursors (organization_guid, signal, checkpoint_at, lease_expires_at, next_attempt_at)
    SELECT organization_guid, 'audit', created_at, 'epoch'::timestamptz, 'epoch'::timestamptz
    FROM forwarder_cursors WHERE signal = 'logs'
    ON CONFLICT (organization_guid, signal) DO NOTHING
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.deleteFrom('forwarder_cursors').where('signal', '=', 'audit').execute();
}
