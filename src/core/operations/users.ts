import { z } from 'zod';
import { AppError, conflict, notFound } from '../errors.js';
import { isGuid, newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import { keepingARoleAdmin } from '../role-admins.js';
import { findRole, findRoleByName, insertRole } from '../repositories/roles.js';
import { existingTeamGuids } from '../repositories/teams.js';
import { deactivateUser, findUser, findUserByEmail, insertUser, listUsers, setUserRole, setUserTeams, type UserRecord } from '../repositories/users.js';
import type { ConfigDb } from '../../stores/postgres.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, READ_ONLY, isUniqueViolation } from './common.js';

export const User = z.object({
  guid: z.string(),
  emailAddress: z.string(),
  displayName: z.string(),
  isActive: z.boolean(),
  roleGuid: z.string(),
  roleName: z.string(),
  teamGuids: z.array(z.string()),
});
const toUser = (u: UserRecord) => ({
  guid: u.guid,
  emailAddress: u.email,
  displayName: u.display_name,
  isActive: u.is_active,
  roleGuid: u.role_guid,
  roleName: u.role_name,
  teamGuids: u.team_guids,
});

/** Holders of any of these see every user (contract section 6). */
const SEE_ALL_USERS = ['manageUserRoles', 'manageUserTeams', 'inviteUsers', 'removeUsers'];

/** The role an invitee gets when none is named: a capability-less "Member" role, created on first use. */
const DEFAULT_ROLE_NAME = 'Member';

const UserGuid = Id('User guid');

/** How many of the ids a team list names no team by a not-found problem repeats, each cut at 64 characters. */
const MAX_NAMED_MISSING = 5;

/**
 * Parses a comma-separated guid list (empty string = none), checking each names a team
 * of the workspace: one that does not, or is not of the service's id format, is a 404,
 * as any id field that names nothing (executor.ts).
 */
async function resolveTeamGuids(db: ConfigDb, principal: Principal, raw: string): Promise<string[]> {
  const guids = [
    ...new Set(
      raw
        .split(',')
        .map((g) => g.trim())
        .filter(Boolean),
    ),
  ];
  const existing = await existingTeamGuids(db, principal.organizationGuid, guids.filter(isGuid));
  const missing = guids.filter((g) => !existing.has(g));
  if (missing.length > 0) {
    const named = missing.slice(0, MAX_NAMED_MISSING).map((g) => JSON.stringify(g.slice(0, 64)));
    throw new AppError('not_found', `Team not found: ${named.join(', ')}${missing.length > named.length ? ` and ${missing.length - named.length} more` : ''}.`);
  }
  return guids;
}

async function loadUser(db: ConfigDb, principal: Principal, guid: string): Promise<UserRecord> {
  const user = await findUser(db, principal.organizationGuid, guid);
  if (!user) throw notFound('User');
  return user;
}

export const userOperations = [
  defineOperation({
    name: 'list_users',
    title: 'List users',
    description:
      'Lists users with their role and teams. Holders of manageUserRoles, manageUserTeams, inviteUsers or removeUsers see everyone; others see themselves and the members of their teams.',
    method: 'GET',
    path: '/users',
    capability: null,
    input: z.strictObject({}),
    output: ItemsOf(User),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => {
      const all = SEE_ALL_USERS.some((c) => principal.capabilities.has(c));
      const users = await listUsers(services.db, principal.organizationGuid, all ? undefined : principal.userGuid);
      return { items: users.map(toUser) };
    },
  }),
  defineOperation({
    name: 'set_user_role',
    title: "Set a user's role",
    description: 'Puts a user on a role (every user has exactly one). Returns the updated user.',
    method: 'PUT',
    path: '/users/:userGuid/role',
    capability: 'manageUserRoles',
    input: z.strictObject({ userGuid: UserGuid, roleGuid: Id('Role guid') }),
    output: User,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const user = await loadUser(services.db, principal, input.userGuid);
      const role = await findRole(services.db, principal.organizationGuid, input.roleGuid);
      if (!role) throw notFound('Role');
      if (user.role_guid !== role.guid) await keepingARoleAdmin(services.db, principal.organizationGuid, (trx) => setUserRole(trx, user.guid, role.guid));
      return toUser(await loadUser(services.db, principal, user.guid));
    },
  }),
  defineOperation({
    name: 'set_user_teams',
    title: "Set a user's teams",
    description: "Makes a user's teams exactly the listed set (comma-separated team guids; an empty string removes every membership).",
    method: 'PUT',
    path: '/users/:userGuid/teams',
    capability: 'manageUserTeams',
    input: z.strictObject({ userGuid: UserGuid, teamGuids: z.string().max(20_000).describe('Comma-separated team guids; empty string clears all') }),
    output: User,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const user = await loadUser(services.db, principal, input.userGuid);
      const teams = await resolveTeamGuids(services.db, principal, input.teamGuids);
      // deactivate_user removed their memberships (admin-api States): nothing may give them back, while "none" is already so.
      if (!user.is_active && teams.length > 0) throw conflict('The user is deactivated: a deactivated user belongs to no team.');
      await services.db.transaction().execute((trx) => setUserTeams(trx, user.guid, teams));
      return toUser(await loadUser(services.db, principal, user.guid));
    },
  }),
  defineOperation({
    name: 'invite_user',
    title: 'Invite a user',
    description:
      'Invites a person by email: the user is created at once with the given role (a capability-less Member role when omitted) and teams, the caller recorded as referrer.',
    method: 'POST',
    path: '/users/invite',
    capability: 'inviteUsers',
    input: z.strictObject({
      email: z.email('must be an email address').max(320),
      firstName: z.string().trim().max(200).optional(),
      lastName: z.string().trim().max(200).optional(),
      roleGuid: Id('Role guid').optional(),
      teamGuids: z.string().max(20_000).optional().describe('Comma-separated team guids'),
      message: z.string().max(5000).optional().describe('A personal note for the invitation'),
    }),
    output: z.object({ email: z.string(), userGuid: z.string() }),
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const email = input.email.trim().toLowerCase();
      const { db } = services;
      if (input.roleGuid !== undefined && !isGuid(input.roleGuid)) throw notFound('Role');
      const teams = input.teamGuids ? await resolveTeamGuids(db, principal, input.teamGuids) : [];
      try {
        return await db.transaction().execute(async (trx) => {
          if (await findUserByEmail(trx, principal.organizationGuid, email)) throw conflict(`${email} is already a user of this workspace.`);
          let roleGuid: string;
          if (input.roleGuid) {
            const role = await findRole(trx, principal.organizationGuid, input.roleGuid);
            if (!role) throw notFound('Role');
            roleGuid = role.guid;
          } else {
            const existing = await findRoleByName(trx, principal.organizationGuid, DEFAULT_ROLE_NAME);
            roleGuid = existing
              ? existing.guid
              : (await insertRole(trx, { guid: newGuid(), organization_guid: principal.organizationGuid, name: DEFAULT_ROLE_NAME, granted_capabilities: [] }))
                  .guid;
          }
          const userGuid = newGuid();
          const displayName = [input.firstName, input.lastName].filter(Boolean).join(' ') || email.split('@')[0] || email;
          await insertUser(trx, {
            guid: userGuid,
            organization_guid: principal.organizationGuid,
            email,
            display_name: displayName,
            role_guid: roleGuid,
            referrer_guid: principal.userGuid,
            invite_message: input.message ?? null,
          });
          await setUserTeams(trx, userGuid, teams);
          return { email, userGuid };
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`${email} is already a user of this workspace.`);
        throw err;
      }
    },
  }),
  defineOperation({
    name: 'deactivate_user',
    title: 'Deactivate a user',
    description: 'Deactivates a user: team memberships are removed and every token of theirs stops working at once. The record stays (isActive false).',
    method: 'POST',
    path: '/users/:userGuid/deactivate',
    capability: 'removeUsers',
    input: z.strictObject({ userGuid: UserGuid }),
    output: z.object({ deactivated: z.string() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const user = await loadUser(services.db, principal, input.userGuid);
      if (user.guid === principal.userGuid) throw conflict('You cannot deactivate yourself; ask another administrator.');
      if (user.is_active) await keepingARoleAdmin(services.db, principal.organizationGuid, (trx) => deactivateUser(trx, user.guid));
      return { deactivated: user.guid };
    },
  }),
];
