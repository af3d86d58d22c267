import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // When an alert of a kind about one thing (a server, an identity) was last raised, by
  // the store's clock: every replica asks here before raising, so a cause is alerted
  // once per window by the whole service, not once per replica (src/core/alert-gate.ts).
  await db.schema
    .createTable('alert_gates')
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('gate_key', 'text', (c) => c.notNull())
    .addColumn('raised_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('alert_gates_pk', ['organization_guid', 'gate_key'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('alert_gates').ifExists().execute();
}
