import { z } from 'zod';
import type { ConfigDb } from '../../stores/postgres.js';
import type { IdentityScheme, ToolFilter, ToolOverrides } from '../../stores/schema.js';
import { conflict, notFound, validationFailed } from '../errors.js';
import { MAX_UPSTREAM_TOOL_NAME, overrideCollision, shownTools, TOOL_NAME, unknownToolNames, type ShownTool } from '../gateways/tool-curation.js';
import { isGuid, newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import { deleteAssignment, findAssignment, insertAssignment, listAssignments, updateAssignment, type AssignmentRecord } from '../repositories/assignments.js';
import { findVisibleIdentity } from '../repositories/identities.js';
import { findServer } from '../repositories/inbound-servers.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, READ_ONLY } from './common.js';
import { GatewayGuid, loadGateway, refuseIfArchived } from './gateways.js';

const Scheme = z.enum(['sharedIdentity', 'userIdentity']);

/** Keys that would rewrite an object's prototype instead of naming a tool. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const ToolFilterSchema = z
  .strictObject({
    mode: z.enum(['allow', 'deny']).describe('allow: only the listed tools; deny: every tool but the listed ones'),
    tools: z
      .array(z.string().min(1, 'must not be empty').max(MAX_UPSTREAM_TOOL_NAME))
      .max(1000)
      .describe("Upstream tool names (the server's own, whatever their characters) or globs with *"),
  })
  .describe("Which of the server's tools the gateway exposes, by the upstream's own names; null clears it");

const ToolOverridesSchema = z
  .record(
    z
      .string()
      .min(1, 'must not be empty')
      .max(MAX_UPSTREAM_TOOL_NAME)
      .refine((k) => !PROTOTYPE_KEYS.has(k), 'is not allowed as a tool name here'),
    z.strictObject({
      name: z.string().regex(TOOL_NAME, 'must be 1-128 of A-Z a-z 0-9 _ - .').optional().describe('The name hosts see'),
      description: z.string().max(8_192).optional().describe('The description hosts see'),
    }),
  )
  .describe('Per upstream tool name: the name and description hosts see instead; calls still reach the upstream under its own name. null clears them');

export const AssignmentSummary = z.object({
  guid: z.string(),
  gatewayGuid: z.string(),
  serverGuids: z.array(z.string()),
  enabled: z.boolean(),
  identityScheme: Scheme.nullable(),
  sharedIdentityGuid: z.string().nullable(),
  configured: z.boolean(),
  toolFilter: ToolFilterSchema.nullable(),
  toolOverrides: ToolOverridesSchema.nullable(),
  toolCurationHint: z.string().optional().describe('Names of the filter or overrides the server does not offer today (kept: they apply once it does)'),
});
const CreatedAssignment = AssignmentSummary.extend({ configurationHint: z.string().optional() });

interface Configuration {
  configured: boolean;
  /** How to finish configuring, when configured is false. */
  hint?: string;
}

/**
 * Whether an assignment can serve calls as it stands. Computed on every read, so a
 * shared identity deleted or disabled later shows up as configured=false at once.
 * An open server needs no identity; userIdentity is complete by itself (each user
 * brings their identity when a gateway token is issued); sharedIdentity needs its
 * identity to exist and be enabled.
 */
export function configurationOf(a: AssignmentRecord): Configuration {
  if (a.server_authentication_type === 'none') return { configured: true };
  if (a.identity_scheme === 'userIdentity') return { configured: true };
  if (a.identity_scheme === 'sharedIdentity') {
    if (a.shared_identity_enabled === true) return { configured: true };
    const state = a.shared_identity_enabled === false ? 'is disabled' : 'no longer exists';
    return {
      configured: false,
      hint: `The shared identity ${a.shared_identity_guid} ${state}: enable it, or re-point the assignment with modify_gateway_assignment (sharedIdentityGuid) or switch it to identityScheme userIdentity.`,
    };
  }
  return {
    configured: false,
    hint: 'This server requires authentication and the assignment has no identity scheme. Finish it with modify_gateway_assignment: identityScheme userIdentity (each user selects their own identity when a gateway token is issued) or sharedIdentity with sharedIdentityGuid (one identity of this server for everyone).',
  };
}

/** The upstream tool names feature-learning found on the assignment's server, or null before it ran. */
function offeredTools(a: Pick<AssignmentRecord, 'server_features'>): { name?: unknown; description?: unknown }[] | null {
  const tools = (a.server_features as { tools?: unknown } | null)?.tools;
  return Array.isArray(tools) ? (tools as { name?: unknown }[]) : null;
}

/** Says which names of the filter or overrides the server does not offer today, if any. */
function curationHint(a: AssignmentRecord): string | undefined {
  const tools = offeredTools(a);
  if (!tools) return undefined;
  const unknown = unknownToolNames(
    a.tool_filter,
    a.tool_overrides,
    tools.map((t) => String(t.name)),
  );
  if (unknown.length === 0) return undefined;
  return `${a.server_name ?? 'The server'} does not offer ${unknown.map((n) => JSON.stringify(n)).join(', ')} today: kept, they apply once it does.`;
}

const toSummary = (a: AssignmentRecord) => {
  const hint = curationHint(a);
  return {
    guid: a.guid,
    gatewayGuid: a.gateway_guid,
    serverGuids: [a.inbound_server_guid],
    enabled: a.enabled,
    identityScheme: a.identity_scheme,
    sharedIdentityGuid: a.shared_identity_guid,
    configured: configurationOf(a).configured,
    toolFilter: a.tool_filter ?? null,
    toolOverrides: a.tool_overrides ?? null,
    ...(hint ? { toolCurationHint: hint } : {}),
  };
};

/** How a 409 names one side of a collision: the tool, its server, and where its name comes from. */
function describeShown(tool: ShownTool, serverName: string): string {
  return tool.renamed ? `tool ${tool.upstreamName} of ${serverName}, shown as ${tool.name} by an override` : `tool ${tool.upstreamName} of ${serverName}`;
}

/**
 * Refuses a curation under which a tool of this assignment and another tool of the
 * gateway (same server or another) would show hosts the same name where an override
 * gave one of them that name, in either direction: this assignment's override
 * taking a name the gateway already shows, or this assignment's server showing a
 * name another assignment's override took. 409 naming both tools and servers.
 */
async function refuseOverrideCollisions(
  db: ConfigDb,
  principal: Principal,
  own: Pick<AssignmentRecord, 'guid' | 'gateway_guid' | 'server_name' | 'server_features'>,
  filter: ToolFilter | null,
  overrides: ToolOverrides | null,
): Promise<void> {
  const offered = (a: Pick<AssignmentRecord, 'server_features'>) => (offeredTools(a) ?? []).map((t) => String(t.name));
  const ownShown = shownTools(filter, overrides, offered(own));
  const serverName = own.server_name ?? 'this server';
  const refuse = ([mine, theirs]: [ShownTool, ShownTool], theirServer: string, where: string) => {
    throw conflict(
      `The name ${mine.name} would be shown for two tools: ${describeShown(mine, serverName)}, and ${describeShown(theirs, theirServer)}${where}. Change the override or filter one of the tools out.`,
    );
  };
  const withinServer = overrideCollision(ownShown, ownShown, true);
  if (withinServer) refuse(withinServer, serverName, '');
  const siblings = (await listAssignments(db, principal.organizationGuid, own.gateway_guid)).filter((a) => a.guid !== own.guid);
  for (const sibling of siblings) {
    const clash = overrideCollision(ownShown, shownTools(sibling.tool_filter, sibling.tool_overrides, offered(sibling)), false);
    if (clash) refuse(clash, sibling.server_name ?? sibling.inbound_server_guid, ` on the same gateway (assignment ${sibling.guid})`);
  }
}

const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

const AssignmentGuid = Id('Assignment guid');

async function loadAssignment(db: ConfigDb, principal: Principal, guid: string): Promise<AssignmentRecord> {
  const assignment = await findAssignment(db, principal.organizationGuid, guid);
  if (!assignment) throw notFound('Assignment');
  return assignment;
}

/**
 * Checks that `identityGuid` names an identity of `serverGuid` the caller may see
 * (a private identity of someone else does not exist for them: 404).
 */
async function requireSharedIdentity(db: ConfigDb, principal: Principal, serverGuid: string, identityGuid: string): Promise<string> {
  const identity = isGuid(identityGuid) ? await findVisibleIdentity(db, principal.organizationGuid, principal.userGuid, identityGuid) : undefined;
  if (!identity) throw notFound('Identity');
  if (identity.inbound_server_guid !== serverGuid) {
    throw validationFailed([{ path: 'sharedIdentityGuid', message: `identity ${identity.guid} belongs to another server, not to ${serverGuid}` }]);
  }
  return identity.guid;
}

/**
 * The scheme a request asks for: sharedIdentityGuid alone implies sharedIdentity,
 * and is ignored for userIdentity. Returns undefined when nothing was asked.
 */
function requestedScheme(input: { identityScheme?: IdentityScheme | undefined; sharedIdentityGuid?: string | undefined }): IdentityScheme | undefined {
  return input.identityScheme ?? (input.sharedIdentityGuid !== undefined ? 'sharedIdentity' : undefined);
}

const MissingSharedIdentity = () =>
  validationFailed([{ path: 'sharedIdentityGuid', message: 'required with identityScheme sharedIdentity: the identity of this server everyone will use' }]);

/** enable_gateway_assignment and disable_gateway_assignment: the same rule, saved only on change. */
async function setAssignmentEnabled(db: ConfigDb, principal: Principal, guid: string, enabled: boolean) {
  const assignment = await loadAssignment(db, principal, guid);
  if (assignment.enabled === enabled) return toSummary(assignment);
  await updateAssignment(db, assignment.guid, { enabled });
  return toSummary({ ...assignment, enabled });
}

const CurationInput = {
  toolFilter: ToolFilterSchema.nullable().optional(),
  toolOverrides: ToolOverridesSchema.nullable().optional(),
};

const SchemeInput = {
  identityScheme: Scheme.optional().describe(
    'userIdentity: each connecting user selects their own identity; sharedIdentity: one identity for everyone (needs sharedIdentityGuid)',
  ),
  sharedIdentityGuid: Id('An identity of the server, used for everyone (implies identityScheme sharedIdentity; ignored for userIdentity)').optional(),
};

export const assignmentOperations = [
  defineOperation({
    name: 'list_gateway_assignments',
    title: "List a gateway's assignments",
    description: 'Lists the server assignments of a gateway, each with its identity scheme and whether it is configured.',
    method: 'GET',
    path: '/gateways/:gatewayGuid/assignments',
    capability: 'viewAllGateways',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: ItemsOf(AssignmentSummary),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      return { items: (await listAssignments(services.db, principal.organizationGuid, gateway.guid)).map(toSummary) };
    },
  }),
  defineOperation({
    name: 'assign_server_to_gateway',
    title: 'Assign a server to a gateway',
    description:
      "Exposes an inbound server through a gateway with a new, enabled assignment (a server may be assigned to the same gateway several times). identityScheme userIdentity: each user selects their own identity when issuing a gateway token; sharedIdentity: everyone uses sharedIdentityGuid. Without a scheme, a server that requires authentication is left configured=false with a configurationHint. toolFilter (allow or deny, names or * globs) chooses the tools hosts see; toolOverrides renames or re-describes them (calls reach the upstream under its own name). An override giving a tool a name another tool of the gateway shows, or a server tool whose name another assignment's override took, is a 409 naming both.",
    method: 'POST',
    path: '/gateways/:gatewayGuid/assignments',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid, inboundServerGuid: Id('The inbound server to expose'), ...SchemeInput, ...CurationInput }),
    output: CreatedAssignment,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      const gateway = await loadGateway(db, principal, input.gatewayGuid);
      const server = isGuid(input.inboundServerGuid) ? await findServer(db, principal.organizationGuid, input.inboundServerGuid) : undefined;
      if (!server) throw notFound('Inbound server');
      refuseIfArchived(gateway, 'assign servers to it');
      const scheme = requestedScheme(input) ?? null;
      let sharedIdentityGuid: string | null = null;
      if (scheme === 'sharedIdentity') {
        if (input.sharedIdentityGuid === undefined) throw MissingSharedIdentity();
        sharedIdentityGuid = await requireSharedIdentity(db, principal, server.guid, input.sharedIdentityGuid);
      }
      const guid = newGuid();
      const filter = input.toolFilter ?? null;
      const overrides = input.toolOverrides ?? null;
      await refuseOverrideCollisions(
        db,
        principal,
        { guid, gateway_guid: gateway.guid, server_name: server.name, server_features: server.features },
        filter,
        overrides,
      );
      await insertAssignment(db, {
        guid,
        organization_guid: principal.organizationGuid,
        gateway_guid: gateway.guid,
        inbound_server_guid: server.guid,
        identity_scheme: scheme,
        shared_identity_guid: sharedIdentityGuid,
        tool_filter: jsonOrNull(filter),
        tool_overrides: jsonOrNull(overrides),
      });
      const created = await loadAssignment(db, principal, guid);
      const { hint } = configurationOf(created);
      return { ...toSummary(created), ...(hint ? { configurationHint: hint } : {}) };
    },
  }),
  defineOperation({
    name: 'modify_gateway_assignment',
    title: 'Change an assignment',
    description:
      "Switches an assignment between userIdentity and sharedIdentity, re-pointing or clearing the shared identity to match, and sets or clears its toolFilter (allow or deny, names or * globs) and toolOverrides (per upstream tool: name, description). sharedIdentityGuid alone implies sharedIdentity; it is ignored for userIdentity. An override giving a tool a name another tool of the gateway shows, or a tool shown again (by a changed filter) whose name another assignment's override took, is a 409 naming both. Saved only when something changes.",
    method: 'PATCH',
    path: '/assignments/:assignmentGuid',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ assignmentGuid: AssignmentGuid, ...SchemeInput, ...CurationInput }),
    output: AssignmentSummary,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      let assignment = await loadAssignment(db, principal, input.assignmentGuid);
      if (input.toolFilter !== undefined || input.toolOverrides !== undefined) {
        const filter = input.toolFilter === undefined ? assignment.tool_filter : input.toolFilter;
        const overrides = input.toolOverrides === undefined ? assignment.tool_overrides : input.toolOverrides;
        await refuseOverrideCollisions(db, principal, assignment, filter, overrides);
        if (jsonOrNull(filter) !== jsonOrNull(assignment.tool_filter) || jsonOrNull(overrides) !== jsonOrNull(assignment.tool_overrides)) {
          await updateAssignment(db, assignment.guid, { tool_filter: jsonOrNull(filter), tool_overrides: jsonOrNull(overrides) });
          assignment = await loadAssignment(db, principal, assignment.guid);
        }
      }
      const scheme = requestedScheme(input);
      if (scheme === undefined) return toSummary(assignment);
      let sharedIdentityGuid: string | null = null;
      if (scheme === 'sharedIdentity') {
        // Switching to (or staying on) sharedIdentity without a guid keeps the current shared identity, if any.
        const target = input.sharedIdentityGuid?.toLowerCase() ?? assignment.shared_identity_guid;
        if (target === null) throw MissingSharedIdentity();
        sharedIdentityGuid =
          target === assignment.shared_identity_guid ? target : await requireSharedIdentity(db, principal, assignment.inbound_server_guid, target);
      }
      if (assignment.identity_scheme === scheme && assignment.shared_identity_guid === sharedIdentityGuid) return toSummary(assignment);
      await updateAssignment(db, assignment.guid, { identity_scheme: scheme, shared_identity_guid: sharedIdentityGuid });
      return toSummary(await loadAssignment(db, principal, assignment.guid));
    },
  }),
  defineOperation({
    name: 'enable_gateway_assignment',
    title: 'Enable an assignment',
    description: 'Enables an assignment: its server is reachable through the gateway again. Saved only when it changes.',
    method: 'POST',
    path: '/assignments/:assignmentGuid/enable',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ assignmentGuid: AssignmentGuid }),
    output: AssignmentSummary,
    annotations: CHANGES,
    handler: ({ services, principal }, input) => setAssignmentEnabled(services.db, principal, input.assignmentGuid, true),
  }),
  defineOperation({
    name: 'disable_gateway_assignment',
    title: 'Disable an assignment',
    description: 'Disables an assignment: it stays, but the gateway skips it until it is enabled again. Saved only when it changes.',
    method: 'POST',
    path: '/assignments/:assignmentGuid/disable',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ assignmentGuid: AssignmentGuid }),
    output: AssignmentSummary,
    annotations: DESTROYS,
    handler: ({ services, principal }, input) => setAssignmentEnabled(services.db, principal, input.assignmentGuid, false),
  }),
  defineOperation({
    name: 'remove_gateway_assignment',
    title: 'Remove an assignment',
    description: 'Removes one assignment (by its own guid) from its gateway. The server, its identities and other assignments stay.',
    method: 'DELETE',
    path: '/assignments/:assignmentGuid',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ assignmentGuid: AssignmentGuid }),
    output: z.object({ removed: z.literal(true), assignmentGuid: z.string() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const assignment = await loadAssignment(services.db, principal, input.assignmentGuid);
      await deleteAssignment(services.db, assignment.guid);
      return { removed: true as const, assignmentGuid: assignment.guid };
    },
  }),
];
