import { sql, type Kysely } from 'kysely';

// Frozen in time: imports nothing from the app (Kysely's migration guidance).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().defaultTo('standard'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('entitlements')
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('entitlements_pk', ['organization_guid', 'key'])
    .execute();

  await db.schema
    .createTable('roles')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('granted_capabilities', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('roles_org_idx').on('roles').column('organization_guid').execute();

  await db.schema
    .createTable('users')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('role_guid', 'uuid', (c) => c.notNull().references('roles.guid'))
    .addColumn('referrer_guid', 'uuid')
    .addColumn('invite_message', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('users_org_email_uq').on('users').columns(['organization_guid', 'email']).unique().execute();
  await db.schema.createIndex('users_role_idx').on('users').column('role_guid').execute();

  await db.schema
    .createTable('teams')
    .addColumn('guid', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('owner_guid', 'uuid', (c) => c.references('users.guid').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('teams_org_idx').on('teams').column('organization_guid').execute();

  await db.schema
    .createTable('team_members')
    .addColumn('team_guid', 'uuid', (c) => c.notNull().references('teams.guid').onDelete('cascade'))
    .addColumn('user_guid', 'uuid', (c) => c.notNull().references('users.guid').onDelete('cascade'))
    .addPrimaryKeyConstraint('team_members_pk', ['team_guid', 'user_guid'])
    .execute();
  await db.schema.createIndex('team_members_user_idx').on('team_members').column('user_guid').execute();

  await db.schema
    .createTable('access_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_guid', 'uuid', (c) => c.notNull().references('organizations.guid').onDelete('cascade'))
    .addColumn('user_guid', 'uuid', (c) => c.notNull().references('users.guid').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('gateway_guid', 'uuid')
    .addColumn('connection_guid', 'uuid')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('access_tokens_user_idx').on('access_tokens').column('user_guid').execute();
  // create_access_token is idempotent by label among the caller's live access tokens.
  await sql`create unique index access_tokens_live_label_uq on access_tokens (user_guid, label) where revoked_at is null and kind = 'access'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['access_tokens', 'team_members', 'teams', 'users', 'roles', 'entitlements', 'organizations']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
