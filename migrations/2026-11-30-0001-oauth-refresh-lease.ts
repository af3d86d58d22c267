import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Until when a process holds the right to refresh an identity's OAuth tokens: the
  // refresh runs with no connection held while the token endpoint answers
  // (src/core/servers/oauth-refresh.ts), where an advisory lock held one per refresh.
  await db.schema.alterTable('identities').addColumn('oauth_refresh_lease_until', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('identities').dropColumn('oauth_refresh_lease_until').execute();
}
