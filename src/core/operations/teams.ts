import { z } from 'zod';
import { notFound } from '../errors.js';
import { newGuid } from '../ids.js';
import { defineOperation } from '../operation.js';
import { deleteTeam, findTeam, insertTeam, listTeams, renameTeam } from '../repositories/teams.js';
import type { Team as TeamRow } from '../../stores/schema.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, Name, READ_ONLY } from './common.js';

export const Team = z.object({ guid: z.string(), name: z.string(), enabled: z.boolean() });
const toTeam = (t: TeamRow) => ({ guid: t.guid, name: t.name, enabled: t.enabled });

const TeamGuid = Id('Team guid');

export const teamOperations = [
  defineOperation({
    name: 'list_teams',
    title: 'List teams',
    description: 'Lists the teams of the workspace. Holders of manageTeams see every team; everyone else sees the teams they belong to.',
    method: 'GET',
    path: '/teams',
    capability: null,
    input: z.strictObject({}),
    output: ItemsOf(Team),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => {
      const all = principal.capabilities.has('manageTeams');
      const teams = await listTeams(services.db, principal.organizationGuid, all ? undefined : principal.userGuid);
      return { items: teams.map(toTeam) };
    },
  }),
  defineOperation({
    name: 'create_team',
    title: 'Create a team',
    description: 'Creates an enabled team owned by the caller. Add members with set_user_teams and provision gateways with assign_team_to_gateway.',
    method: 'POST',
    path: '/teams',
    capability: 'manageTeams',
    input: z.strictObject({ name: Name('Team name') }),
    output: Team,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) =>
      toTeam(
        await insertTeam(services.db, { guid: newGuid(), organization_guid: principal.organizationGuid, name: input.name, owner_guid: principal.userGuid }),
      ),
  }),
  defineOperation({
    name: 'rename_team',
    title: 'Rename a team',
    description: 'Renames a team. Nothing is saved when the name is already the requested one.',
    method: 'PATCH',
    path: '/teams/:teamGuid/name',
    capability: 'manageTeams',
    input: z.strictObject({ teamGuid: TeamGuid, newName: Name('New team name') }),
    output: Team,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const team = await findTeam(services.db, principal.organizationGuid, input.teamGuid);
      if (!team) throw notFound('Team');
      if (team.name === input.newName) return toTeam(team);
      return toTeam(await renameTeam(services.db, team.guid, input.newName));
    },
  }),
  defineOperation({
    name: 'delete_team',
    title: 'Delete a team',
    description: 'Deletes a team for good, with its memberships and its gateway provisioning links. Users and gateways themselves stay.',
    method: 'DELETE',
    path: '/teams/:teamGuid',
    capability: 'manageTeams',
    input: z.strictObject({ teamGuid: TeamGuid }),
    output: z.object({ deleted: z.literal(true), teamGuid: z.string() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const team = await findTeam(services.db, principal.organizationGuid, input.teamGuid);
      if (!team) throw notFound('Team');
      await deleteTeam(services.db, team.guid);
      return { deleted: true as const, teamGuid: team.guid };
    },
  }),
];
