import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // The identity a pending validation job authenticates with: the one just added or
  // re-keyed, so a job validates exactly the credential that caused it.
  await db.schema.alterTable('inbound_servers').addColumn('validation_identity_guid', 'uuid').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('inbound_servers').dropColumn('validation_identity_guid').execute();
}
