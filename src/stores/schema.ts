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

export interface SecretsTable {
  guid: string;
  organization_guid: string;
  key_id: string;
  nonce: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type AuthenticationType = 'none' | 'headers' | 'oauth';
export type AuthenticationStatus = 'open' | 'needs-authentication' | 'authenticated' | 'unsupported';

export interface InboundServersTable {
  guid: string;
  organization_guid: string;
  name: string;
  url: string;
  enabled: Generated<boolean>;
  authentication_type: AuthenticationType;
  authentication_status: AuthenticationStatus;
  status_reason: string | null;
  owner_guid: string;
  oauth_settings: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  oauth_client_secret_guid: string | null;
  features: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  features_updated_at: NullableTimestamp;
  validation_due_at: NullableTimestamp;
  validation_attempts: Generated<number>;
  /** The identity a pending validation authenticates with (migration 0004). */
  validation_identity_guid: Generated<string | null>;
  deleted_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface IdentitiesTable {
  guid: string;
  organization_guid: string;
  inbound_server_guid: string;
  name: string;
  enabled: Generated<boolean>;
  access_control: 'private' | 'global';
  creator_guid: string;
  kind: 'headers' | 'oauth';
  header_names: string[];
  secret_guid: string | null;
  oauth_expires_at: NullableTimestamp;
  /** The issuer of the authorization server that minted an OAuth identity's tokens; null when not known (migration 2026-11-25-0010). */
  oauth_issuer: Generated<string | null>;
  /** Until when one process holds the right to refresh the identity's OAuth tokens (migration 2026-11-30-0001). */
  oauth_refresh_lease_until: NullableTimestamp;
  created_at: Timestamp;
}

export interface OauthStatesTable {
  state: string;
  organization_guid: string;
  user_guid: string;
  inbound_server_guid: string;
  identity_label: string | null;
  access_control: 'private' | 'global';
  verifier_secret_guid: string;
  /** The issuer the authorization request was sent to (migration 2026-11-25-0010). */
  issuer: Generated<string | null>;
  expires_at: Timestamp;
  created_at: Timestamp;
}

export interface GatewaysTable {
  guid: string;
  organization_guid: string;
  name: string;
  enabled: Generated<boolean>;
  archived: Generated<boolean>;
  owner_guid: string;
  tool_naming: Generated<ToolNamingMode>;
  created_at: Timestamp;
}

export type ToolNamingMode = 'prefixed' | 'when-needed';

/** Which of a server's tools an assignment exposes: names or `*` globs, allowed or denied. */
export interface ToolFilter {
  mode: 'allow' | 'deny';
  tools: string[];
}

/** Per upstream tool name: the name and description hosts see instead. */
export type ToolOverrides = Record<string, { name?: string; description?: string }>;

export interface GatewayTeamsTable {
  gateway_guid: string;
  team_guid: string;
  created_at: Timestamp;
}

export type IdentityScheme = 'sharedIdentity' | 'userIdentity';

export interface GatewayAssignmentsTable {
  guid: string;
  organization_guid: string;
  gateway_guid: string;
  inbound_server_guid: string;
  enabled: Generated<boolean>;
  identity_scheme: IdentityScheme | null;
  shared_identity_guid: string | null;
  tool_filter: ColumnType<ToolFilter | null, string | null | undefined, string | null>;
  tool_overrides: ColumnType<ToolOverrides | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface HostsTable {
  guid: string;
  organization_guid: string;
  name: string;
  enabled: Generated<boolean>;
  authentication_type: Generated<string>;
  created_at: Timestamp;
}

export interface ConnectionsTable {
  guid: string;
  organization_guid: string;
  name: string;
  enabled: Generated<boolean>;
  gateway_guid: string;
  host_guid: string | null;
  creator_guid: string;
  /** inbound server guid -> identity guid, for userIdentity servers. */
  server_identities: ColumnType<Record<string, string>, string | undefined, string>;
  created_at: Timestamp;
}

/** Gateway sessions a host ended (DELETE), kept until the session would have expired (src/gateway/ended-sessions.ts). */
export interface EndedGatewaySessionsTable {
  connection_guid: string;
  /** The session's short id (GatewaySession.id), not the sealed id. */
  session_id: string;
  expires_at: Timestamp;
  /** When it was ended, by the store's clock (set by the store): replicas read the ends since their last read. */
  ended_at: Timestamp;
}

/** When an alert about one cause was last raised (src/core/alert-gate.ts). */
export interface AlertGatesTable {
  organization_guid: string;
  gate_key: string;
  raised_at: Timestamp;
}

export interface Database {
  organizations: OrganizationsTable;
  entitlements: EntitlementsTable;
  roles: RolesTable;
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  access_tokens: AccessTokensTable;
  secrets: SecretsTable;
  inbound_servers: InboundServersTable;
  identities: IdentitiesTable;
  oauth_states: OauthStatesTable;
  gateways: GatewaysTable;
  gateway_teams: GatewayTeamsTable;
  gateway_assignments: GatewayAssignmentsTable;
  hosts: HostsTable;
  connections: ConnectionsTable;
  collector_configurations: CollectorConfigurationsTable;
  forwarder_cursors: ForwarderCursorsTable;
  ended_gateway_sessions: EndedGatewaySessionsTable;
  alert_gates: AlertGatesTable;
}

export type Organization = Selectable<OrganizationsTable>;
export type Role = Selectable<RolesTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Team = Selectable<TeamsTable>;
export type AccessToken = Selectable<AccessTokensTable>;
export type NewAccessToken = Insertable<AccessTokensTable>;
export type AccessTokenUpdate = Updateable<AccessTokensTable>;

export type LogsFormat = 'otlp' | 'collector_hec';
/** A forwarder cursor's signal: call logs as logs, call logs as spans, admin audit records (sent to the logs collector). */
export type ForwardedSignal = 'logs' | 'traces' | 'audit';

export interface CollectorConfigurationsTable {
  organization_guid: string;
  logs_url: string | null;
  /** null: saved before the field existed; reads as otlp. */
  logs_format: LogsFormat | null;
  traces_url: string | null;
  header_names: string[];
  headers_secret_guid: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ForwarderCursorsTable {
  organization_guid: string;
  signal: ForwardedSignal;
  checkpoint_at: Timestamp;
  checkpoint_guid: Generated<string>;
  lease_owner: string | null;
  lease_expires_at: Timestamp;
  next_attempt_at: Timestamp;
  attempts: Generated<number>;
  last_error: string | null;
  sent_total: Generated<number>;
  retried_total: Generated<number>;
  /** Always 0 since session 26: no answer of a collector skips records any more (docs/forwarding.md, Retries). */
  failed_total: Generated<number>;
  rejected_total: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type CollectorConfiguration = Selectable<CollectorConfigurationsTable>;
export type ForwarderCursor = Selectable<ForwarderCursorsTable>;
