import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // How a gateway names the tools and prompts of its servers (contract 8.2):
  // prefixed (`<slug>__<name>`, the default) or when-needed.
  await db.schema
    .alterTable('gateways')
    .addColumn('tool_naming', 'text', (c) => c.notNull().defaultTo('prefixed'))
    .execute();
  // Per assignment: which of the server's tools are exposed ({mode, tools}) and how
  // some are renamed or re-described ({<upstream name>: {name?, description?}}).
  await db.schema.alterTable('gateway_assignments').addColumn('tool_filter', 'jsonb').addColumn('tool_overrides', 'jsonb').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('gateway_assignments').dropColumn('tool_filter').dropColumn('tool_overrides').execute();
  await db.schema.alterTable('gateways').dropColumn('tool_naming').execute();
}
