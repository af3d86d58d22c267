import { z } from 'zod';
import type { Config } from '../../config.js';
import type { ConfigDb } from '../../stores/postgres.js';
import { conflict, notFound } from '../errors.js';
import { newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import type { Services } from '../services.js';
import {
  findGateway,
  insertGateway,
  listGateways,
  provisionTeam,
  unprovisionTeam,
  updateGateway,
  type Gateway as GatewayRow,
} from '../repositories/gateways.js';
import { findTeam } from '../repositories/teams.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, Name, READ_ONLY } from './common.js';

export const Gateway = z.object({ guid: z.string(), name: z.string(), enabled: z.boolean(), url: z.string() });
const ArchivableGateway = Gateway.extend({ archived: z.boolean() });

/** The public connect URL of a gateway: derived from its guid, never stored. */
export const gatewayUrl = (config: Pick<Config, 'publicBaseUrl'>, guid: string): string => `${config.publicBaseUrl}/gateways/${guid}/mcp`;

const toGateway = (config: Config, g: GatewayRow) => ({ guid: g.guid, name: g.name, enabled: g.enabled, url: gatewayUrl(config, g.guid) });
const toArchivableGateway = (config: Config, g: GatewayRow) => ({ ...toGateway(config, g), archived: g.archived });

export const GatewayGuid = Id('Gateway guid');

/** A gateway of the caller's workspace (archived included), or 404. */
export async function loadGateway(db: ConfigDb, principal: Principal, guid: string): Promise<GatewayRow> {
  const gateway = await findGateway(db, principal.organizationGuid, guid);
  if (!gateway) throw notFound('Gateway');
  return gateway;
}

/** Archiving is the delete of gateways: nothing new may attach to an archived one. */
export function refuseIfArchived(gateway: GatewayRow, what: string): void {
  if (gateway.archived) throw conflict(`The gateway ${gateway.guid} is archived: unarchive it with unarchive_gateway before you ${what}.`);
}

/**
 * enable_gateway and disable_gateway: "always" (admin-api, States), saved only on
 * change. An archived gateway may be enabled too: it still serves nobody while
 * archived (access.ts), and unarchiving it leaves `enabled` as it is.
 */
async function setGatewayEnabled(services: Pick<Services, 'db' | 'config'>, principal: Principal, guid: string, enabled: boolean) {
  const gateway = await loadGateway(services.db, principal, guid);
  if (gateway.enabled === enabled) return toGateway(services.config, gateway);
  return toGateway(services.config, await updateGateway(services.db, gateway.guid, { enabled }));
}

export const gatewayOperations = [
  defineOperation({
    name: 'list_gateways',
    title: 'List gateways',
    description: 'Lists the gateways of the workspace with their public connect URL. Archived gateways are hidden unless includeArchived is true.',
    method: 'GET',
    path: '/gateways',
    capability: 'viewAllGateways',
    input: z.strictObject({ includeArchived: z.boolean().optional().describe('Also list archived gateways (default false)') }),
    output: ItemsOf(Gateway),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const gateways = await listGateways(services.db, principal.organizationGuid, input.includeArchived ?? false);
      return { items: gateways.map((g) => toGateway(services.config, g)) };
    },
  }),
  defineOperation({
    name: 'create_gateway',
    title: 'Create a gateway',
    description:
      'Creates an enabled gateway owned by the caller. No team is provisioned (use assign_team_to_gateway); expose servers with assign_server_to_gateway.',
    method: 'POST',
    path: '/gateways',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ name: Name('Gateway name') }),
    output: Gateway,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) =>
      toGateway(
        services.config,
        await insertGateway(services.db, { guid: newGuid(), organization_guid: principal.organizationGuid, name: input.name, owner_guid: principal.userGuid }),
      ),
  }),
  defineOperation({
    name: 'get_gateway',
    title: 'Get a gateway',
    description: 'Returns one gateway (archived ones too) with its public connect URL.',
    method: 'GET',
    path: '/gateways/:gatewayGuid',
    capability: 'viewAllGateways',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: Gateway,
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => toGateway(services.config, await loadGateway(services.db, principal, input.gatewayGuid)),
  }),
  defineOperation({
    name: 'rename_gateway',
    title: 'Rename a gateway',
    description: 'Renames a gateway. Nothing is saved when the name is already the requested one.',
    method: 'PATCH',
    path: '/gateways/:gatewayGuid/name',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid, newName: Name('New gateway name') }),
    output: Gateway,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      if (gateway.name === input.newName) return toGateway(services.config, gateway);
      return toGateway(services.config, await updateGateway(services.db, gateway.guid, { name: input.newName }));
    },
  }),
  defineOperation({
    name: 'enable_gateway',
    title: 'Enable a gateway',
    description:
      'Enables a gateway so connections through it work again (an archived gateway serves nobody until it is unarchived too). Saved only when it changes.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/enable',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: Gateway,
    annotations: CHANGES,
    handler: ({ services, principal }, input) => setGatewayEnabled(services, principal, input.gatewayGuid, true),
  }),
  defineOperation({
    name: 'disable_gateway',
    title: 'Disable a gateway',
    description: 'Disables a gateway: every connection through it is refused until it is enabled again. Nothing is deleted. Saved only when it changes.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/disable',
    capability: 'basicGatewayManagement',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: Gateway,
    annotations: DESTROYS,
    handler: ({ services, principal }, input) => setGatewayEnabled(services, principal, input.gatewayGuid, false),
  }),
  defineOperation({
    name: 'archive_gateway',
    title: 'Archive a gateway',
    description:
      'Archives a gateway (the delete of gateways, which have no hard delete): it is disabled and hidden from list_gateways. unarchive_gateway brings it back, still disabled.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/archive',
    capability: 'archiveGateway',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: ArchivableGateway,
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      if (gateway.archived && !gateway.enabled) return toArchivableGateway(services.config, gateway);
      return toArchivableGateway(services.config, await updateGateway(services.db, gateway.guid, { archived: true, enabled: false }));
    },
  }),
  defineOperation({
    name: 'unarchive_gateway',
    title: 'Unarchive a gateway',
    description:
      'Brings an archived gateway back into list_gateways. Its enabled state stays as it is (archiving disabled it): enable it separately with enable_gateway.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/unarchive',
    capability: 'archiveGateway',
    input: z.strictObject({ gatewayGuid: GatewayGuid }),
    output: ArchivableGateway,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      if (!gateway.archived) return toArchivableGateway(services.config, gateway);
      return toArchivableGateway(services.config, await updateGateway(services.db, gateway.guid, { archived: false }));
    },
  }),
  defineOperation({
    name: 'assign_team_to_gateway',
    title: 'Provision a team to a gateway',
    description: 'Provisions a team to a gateway (a team-to-gateway link). Idempotent: provisioning a team twice leaves one link.',
    method: 'POST',
    path: '/gateways/:gatewayGuid/teams/:teamGuid',
    capability: 'manageTeamGatewayProvisioning',
    input: z.strictObject({ gatewayGuid: GatewayGuid, teamGuid: Id('Team guid') }),
    output: z.object({ assigned: z.literal(true), gatewayGuid: z.string(), teamGuid: z.string() }),
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      const team = await findTeam(services.db, principal.organizationGuid, input.teamGuid);
      if (!team) throw notFound('Team');
      refuseIfArchived(gateway, 'provision a team to it');
      await provisionTeam(services.db, gateway.guid, team.guid);
      return { assigned: true as const, gatewayGuid: gateway.guid, teamGuid: team.guid };
    },
  }),
  defineOperation({
    name: 'remove_team_from_gateway',
    title: 'Remove a team from a gateway',
    description: "Removes a team's provisioning link to a gateway. Returns removed false (and changes nothing) when the team was not provisioned.",
    method: 'DELETE',
    path: '/gateways/:gatewayGuid/teams/:teamGuid',
    capability: 'manageTeamGatewayProvisioning',
    input: z.strictObject({ gatewayGuid: GatewayGuid, teamGuid: Id('Team guid') }),
    output: z.object({ removed: z.boolean() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const gateway = await loadGateway(services.db, principal, input.gatewayGuid);
      const team = await findTeam(services.db, principal.organizationGuid, input.teamGuid);
      if (!team) throw notFound('Team');
      return { removed: await unprovisionTeam(services.db, gateway.guid, team.guid) };
    },
  }),
];
