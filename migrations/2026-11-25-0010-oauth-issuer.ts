import type { Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Upstream OAuth credentials are keyed by the issuer that minted them (MCP
  // authorization, revision 2026-07-28): an identity records its authorization
  // server's issuer, and a pending authorization the issuer it was sent to, whose
  // answer alone (RFC 9207 `iss`) the callback accepts. Null where it is not known:
  // identities given as tokens (headless) and those created before this migration.
  await db.schema.alterTable('identities').addColumn('oauth_issuer', 'text').execute();
  await db.schema.alterTable('oauth_states').addColumn('issuer', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('oauth_states').dropColumn('issuer').execute();
  await db.schema.alterTable('identities').dropColumn('oauth_issuer').execute();
}
