import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * The Postgres configuration store as Kysely sees it. One `XTable` per table;
 * Selectable/Insertable aliases are what repositories trade in.
 */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface OrganizationsTable {
  guid: string;
  name: string;
  type: 'standard' | 'partner';
  created_at: Timestamp;
}

export interface EntitlementsTable {
  organization_guid: string;
  key: string;
}

export interface RolesTable {
  guid: string;
  organization_guid: string;
  name: string;
  granted_capabilities: string[];
  created_at: Timestamp;
}

export interface UsersTable {
  guid: string;
  organization_guid: string;
  email: string;
  display_name: string;
  is_active: Generated<boolean>;
  role_guid: string;
  referrer_guid: string | null;
  invite_message: string | null;
  created_at: Timestamp;
}

export interface TeamsTable {
  guid: string;
  organization_guid: string;
  name: string;
  enabled: Generated<boolean>;
  owner_guid: string | null;
  created_at: Timestamp;
}

export interface TeamMembersTable {
  team_guid: string;
  user_guid: string;
}

export interface AccessTokensTable {
  id: string;
  organization_guid: string;
  user_guid: string;
  kind: 'access' | 'gateway';
  label: string;
  prefix: string;
  token_hash: string;
  gateway_guid: string | null;
  connection_guid: string | null;
  expires_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface Database {
  organizations: OrganizationsTable;
  entitlements: EntitlementsTable;
  roles: RolesTable;
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  access_tokens: AccessTokensTable;
}

export type Organization = Selectable<OrganizationsTable>;
export type Role = Selectable<RolesTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Team = Selectable<TeamsTable>;
export type AccessToken = Selectable<AccessTokensTable>;
export type NewAccessToken = Insertable<AccessTokensTable>;
export type AccessTokenUpdate = Updateable<AccessTokensTable>;
