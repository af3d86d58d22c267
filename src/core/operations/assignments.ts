import { z } from 'zod';
import type { ConfigDb } from '../../stores/postgres.js';
import type { IdentityScheme } from '../../stores/schema.js';
import { notFound, validationFailed } from '../errors.js';
import { isGuid, newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import { deleteAssignment, findAssignment, insertAssignment, listAssignments, updateAssignment, type AssignmentRecord } from '../repositories/assignments.js';
import { findVisibleIdentity } from '../repositories/identities.js';
import { findServer } from '../repositories/inbound-servers.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, READ_ONLY } from './common.js';
import { GatewayGuid, loadGateway, refuseIfArchived } from './gateways.js';

const Scheme = z.enum(['sharedIdentity', 'userIdentity']);

export const AssignmentSummary = z.object({
  guid: z.string(),
  gatewayGuid: z.string(),
  serverGuids: z.array(z.string()),
  enabled: z.boolean(),
  identityScheme: Scheme.nullable(),
  sharedIdentityGuid: z.string().nullable(),
  configured: z.boolean(),
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

const toSummary = (a: AssignmentRecord) => ({
  guid: a.guid,
  gatewayGuid: a.gateway_guid,
  serverGuids: [a.inbound_server_guid],
  enabled: a.enabled,
  identityScheme: a.identity_scheme,
  sharedIdentityGuid: a.shared_identity_guid,
  configured: configurationOf(a).configured,
});

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
      'Exposes an inbound server through a gateway with a new, enabled assignment (a server may be assigned to the same gateway several times). identityScheme userIdentity: each user selects their own identity when issuing a gateway token; sharedIdentity: everyone uses sharedIdentityGuid. Without a scheme, a server that requires authentication is left configured=false with a configurationHint.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/assignments',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid, inboundServerGuid: Id('The inbound server to expose'), ...SchemeInput }),
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
      await insertAssignment(db, {
        guid,
        organization_guid: principal.organizationGuid,
        gateway_guid: gateway.guid,
        inbound_server_guid: server.guid,
        identity_scheme: scheme,
        shared_identity_guid: sharedIdentityGuid,
      });
      const created = await loadAssignment(db, principal, guid);
      const { hint } = configurationOf(created);
      return { ...toSummary(created), ...(hint ? { configurationHint: hint } : {}) };
    },
  }),
  defineOperation({
    name: 'modify_gateway_assignment',
    title: 'Change the identity scheme of an assignment',
    description:
      'Switches an assignment between userIdentity and sharedIdentity, re-pointing or clearing the shared identity to match. sharedIdentityGuid alone implies sharedIdentity; it is ignored for userIdentity. Saved only when something changes.',
    method: 'PATCH',
    path: '/assignments/:assignmentGuid',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ assignmentGuid: AssignmentGuid, ...SchemeInput }),
    output: AssignmentSummary,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      const assignment = await loadAssignment(db, principal, input.assignmentGuid);
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
