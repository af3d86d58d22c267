/**
 * The capability catalog: every key a role can grant, grouped as list_capabilities
 * reports them. The eleven group names and the keys named in admin-api.md are fixed
 * by the spec; the Reporting, Integrations and Partner Portal keys are ours.
 */
export interface CapabilityInfo {
  key: string;
  label: string;
  description: string;
}

export interface CapabilityGroup {
  name: string;
  /** Partner Portal capabilities exist only in partner-type workspaces. */
  partnerOnly?: boolean;
  capabilities: CapabilityInfo[];
}

const cap = (key: string, label: string, description: string): CapabilityInfo => ({ key, label, description });

export const CAPABILITY_GROUPS: readonly CapabilityGroup[] = [
  {
    name: 'Identities',
    capabilities: [
      cap(
        'accessAllIdentities',
        'Access all identities',
        'List the identities of every inbound server (private identities stay visible only to their creator).',
      ),
      cap('identityManagement', 'Manage identities', 'Add, enable, disable and delete identities, and change the availability and headers of your own.'),
    ],
  },
  {
    name: 'Servers',
    capabilities: [
      cap('viewAllServers', 'View all servers', 'List and read every inbound server of the workspace.'),
      cap('basicServerManagement', 'Manage servers', 'Register inbound servers and rename them.'),
      cap('enableDisableServers', 'Enable and disable servers', 'Turn inbound servers on and off.'),
      cap('deleteServers', 'Delete servers', 'Delete inbound servers.'),
    ],
  },
  {
    name: 'Gateways',
    capabilities: [
      cap('viewAllGateways', 'View all gateways', 'List and read gateways and their assignments.'),
      cap('basicGatewayManagement', 'Manage gateways', 'Create, rename, enable and disable gateways, and manage their server assignments.'),
      cap('archiveGateway', 'Archive gateways', 'Archive and unarchive gateways (archiving is the delete of a gateway).'),
      cap('manageTeamGatewayProvisioning', 'Provision gateways to teams', 'Link teams to gateways and remove those links.'),
    ],
  },
  {
    name: 'Hosts',
    capabilities: [
      cap('createAndManageApiTokens', 'Create and manage API tokens', 'Create and rename hosts and issue gateway tokens.'),
      cap('enableDisableHosts', 'Enable and disable hosts', 'Turn hosts on and off.'),
      cap('deleteHosts', 'Delete hosts', 'Delete hosts.'),
      cap('enableDisableConnections', 'Manage connections', 'List, read, enable and disable connections.'),
    ],
  },
  {
    name: 'People',
    capabilities: [
      cap('manageTeams', 'Manage teams', 'See every team; create, rename and delete teams.'),
      cap('manageRoles', 'Manage roles', 'List, create, modify and delete roles.'),
      cap('manageUserRoles', 'Manage user roles', "Change a user's role."),
      cap('manageUserTeams', 'Manage user teams', "Change a user's team memberships."),
      cap('inviteUsers', 'Invite users', 'Invite new users to the workspace.'),
      cap('removeUsers', 'Remove users', 'Deactivate users.'),
    ],
  },
  {
    name: 'Workspace settings',
    capabilities: [
      cap('manageOtelCollector', 'Manage the collector', 'Read and change where call logs and traces are forwarded (OTLP or HEC).'),
      cap('viewAuditLog', 'View the audit log', 'Read the admin audit log: who changed what, when, from where and through which surface.'),
    ],
  },
  {
    name: 'Logging',
    capabilities: [cap('exportLogs', 'Query and export logs', 'Query the call logs of the workspace.')],
  },
  {
    name: 'Alerting',
    capabilities: [cap('seeAllAlerts', 'See all alerts', 'List and read every alert of the workspace.')],
  },
  {
    name: 'Reporting',
    capabilities: [cap('viewUsageReports', 'View usage reports', 'See aggregated usage of gateways, servers and tools.')],
  },
  {
    name: 'Integrations',
    capabilities: [cap('manageIntegrations', 'Manage integrations', 'Connect the workspace to external systems (directory sync, chat notifications).')],
  },
  {
    name: 'Partner Portal',
    partnerOnly: true,
    capabilities: [
      cap('managePartnerWorkspaces', 'Manage customer workspaces', 'Create and administer the workspaces of your customers.'),
      cap('viewPartnerBilling', 'View partner billing', 'See usage and billing across customer workspaces.'),
    ],
  },
];

export type OrganizationType = 'standard' | 'partner';

/**
 * The groups as a workspace of this type sees them: all eleven names always (contract
 * section 4), a partner-only group's keys only in a partner workspace (empty elsewhere).
 */
export function capabilityGroupsFor(orgType: OrganizationType): CapabilityGroup[] {
  return CAPABILITY_GROUPS.map((g) => (!g.partnerOnly || orgType === 'partner' ? g : { ...g, capabilities: [] }));
}

/** Every key grantable in a workspace of this type. */
export function capabilityKeysFor(orgType: OrganizationType): string[] {
  return capabilityGroupsFor(orgType).flatMap((g) => g.capabilities.map((c) => c.key));
}

export const ALL_CAPABILITY_KEYS: ReadonlySet<string> = new Set(CAPABILITY_GROUPS.flatMap((g) => g.capabilities.map((c) => c.key)));
