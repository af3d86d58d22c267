import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app.
export async function up(db: Kysely<any>): Promise<void> {
  // Encrypted secrets (AES-256-GCM envelopes). Kept apart from the records that use
  // them, so deleting an identity can leave its credential stored (admin-api rule).
  await db.schema
    .createTable('secrets')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('nonce', 'bytea', (c) => c.notNull())
    .addColumn('ciphertext', 'bytea', (c) => c.notNull())
    .addColumn('auth_tag', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('secrets_org_idx').on('secrets').column('organization_guid').execute();

  await db.schema
    .createTable('inbound_servers')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('authentication_type', 'text', (c) => c.notNull()) // none | headers | oauth
    .addColumn('authentication_status', 'text', (c) => c.notNull()) // open | needs-authentication | authenticated | unsupported
    .addColumn('status_reason', 'text') // why validation failed, no secret in it
    .addColumn('owner_guid', 'uuid', (c) => c.notNull())
    // Non-secret OAuth settings: token endpoint, client id, scope, discovered metadata.
    .addColumn('oauth_settings', 'jsonb')
    // Encrypted OAuth client secret from dynamic client registration, if any.
    .addColumn('oauth_client_secret_guid', 'uuid')
    // What feature-learning found: {tools, prompts, resources, resourceTemplates, serverInfo}.
    .addColumn('features', 'jsonb')
    .addColumn('features_updated_at', 'timestamptz')
    .addColumn('validation_due_at', 'timestamptz') // a pending validation job, picked up again after a restart
    .addColumn('validation_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('deleted_at', 'timestamptz') // soft delete: assignments and identities stay (inert)
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('inbound_servers_org_idx').on('inbound_servers').column('organization_guid').execute();
  await sql`create index inbound_servers_validation_due_idx on inbound_servers (validation_due_at) where validation_due_at is not null`.execute(db);

  await db.schema
    .createTable('identities')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('inbound_server_guid', 'uuid', (c) => c.notNull()) // no FK: a deleted server leaves its identities
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('access_control', 'text', (c) => c.notNull().defaultTo('private')) // private | global
    .addColumn('creator_guid', 'uuid', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull()) // headers | oauth
    .addColumn('header_names', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('secret_guid', 'uuid') // headers map or OAuth token set, encrypted
    .addColumn('oauth_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('identities_server_idx').on('identities').columns(['organization_guid', 'inbound_server_guid']).execute();

  // Interactive OAuth: one row per authorization started, consumed by the callback.
  await db.schema
    .createTable('oauth_states')
    .addColumn('state', 'text', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('user_guid', 'uuid', (c) => c.notNull())
    .addColumn('inbound_server_guid', 'uuid', (c) => c.notNull())
    .addColumn('identity_label', 'text')
    .addColumn('access_control', 'text', (c) => c.notNull().defaultTo('private'))
    .addColumn('verifier_secret_guid', 'uuid', (c) => c.notNull()) // PKCE code verifier, encrypted
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('gateways')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('archived', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('owner_guid', 'uuid', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('gateways_org_idx').on('gateways').column('organization_guid').execute();

  await db.schema
    .createTable('gateway_teams')
    .addColumn('gateway_guid', 'uuid', (c) => c.notNull().references('gateways.guid').onDelete('cascade'))
    .addColumn('team_guid', 'uuid', (c) => c.notNull().references('teams.guid').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('gateway_teams_pk', ['gateway_guid', 'team_guid'])
    .execute();
  await db.schema.createIndex('gateway_teams_team_idx').on('gateway_teams').column('team_guid').execute();

  await db.schema
    .createTable('gateway_assignments')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('gateway_guid', 'uuid', (c) => c.notNull().references('gateways.guid').onDelete('cascade'))
    .addColumn('inbound_server_guid', 'uuid', (c) => c.notNull()) // no FK: a deleted server leaves the assignment inert
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('identity_scheme', 'text') // null | sharedIdentity | userIdentity
    .addColumn('shared_identity_guid', 'uuid')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('gateway_assignments_gateway_idx').on('gateway_assignments').column('gateway_guid').execute();

  await db.schema
    .createTable('hosts')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('authentication_type', 'text', (c) => c.notNull().defaultTo('apiToken'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('hosts_org_idx').on('hosts').column('organization_guid').execute();

  await db.schema
    .createTable('connections')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('gateway_guid', 'uuid', (c) => c.notNull().references('gateways.guid'))
    .addColumn('host_guid', 'uuid', (c) => c.references('hosts.guid').onDelete('set null'))
    .addColumn('creator_guid', 'uuid', (c) => c.notNull())
    // inbound server guid -> identity guid chosen at issue_gateway_token, for userIdentity servers.
    .addColumn('server_identities', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('connections_org_idx').on('connections').columns(['organization_guid', 'gateway_guid']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['connections', 'hosts', 'gateway_assignments', 'gateway_teams', 'gateways', 'oauth_states', 'identities', 'inbound_servers', 'secrets']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
