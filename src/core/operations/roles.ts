import { z } from 'zod';
import { capabilityKeysFor, type OrganizationType } from '../capabilities.js';
import { notFound, validationFailed } from '../errors.js';
import { newGuid } from '../ids.js';
import { keepingARoleAdmin } from '../role-admins.js';
import { defineOperation } from '../operation.js';
import { deleteRole, findRole, insertRole, listRoles, updateRole } from '../repositories/roles.js';
import { reassignRole } from '../repositories/users.js';
import type { Role as RoleRow } from '../../stores/schema.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, Name, READ_ONLY } from './common.js';

export const Role = z.object({ guid: z.string(), name: z.string(), grantedCapabilities: z.array(z.string()) });
const toRole = (r: RoleRow) => ({ guid: r.guid, name: r.name, grantedCapabilities: [...r.granted_capabilities].sort() });

/** Booleans are accepted too, because MCP clients often send them; anything but 'true'/true grants nothing. */
const Grants = z
  .record(z.string(), z.union([z.string(), z.boolean()]))
  .describe("Capability key to 'true' or 'false' (see list_capabilities for the keys). Any value other than 'true' means false.");

/**
 * Applies a grants map to a set of granted keys. Unknown keys are refused rather
 * than silently stored: a typo would otherwise grant nothing without a word.
 */
function applyGrants(current: readonly string[], grants: Record<string, string | boolean>, orgType: OrganizationType): string[] {
  const known = new Set(capabilityKeysFor(orgType));
  const unknown = Object.keys(grants).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw validationFailed(unknown.map((k) => ({ path: `grants.${k}`, message: 'unknown capability key (see list_capabilities)' })));
  }
  const result = new Set(current);
  for (const [key, value] of Object.entries(grants)) {
    if (value === true || value === 'true') result.add(key);
    else result.delete(key);
  }
  return [...result].sort();
}

const RoleGuid = Id('Role guid');

export const roleOperations = [
  defineOperation({
    name: 'list_roles',
    title: 'List roles',
    description: 'Lists the roles of the workspace with the capability keys each grants.',
    method: 'GET',
    path: '/roles',
    capability: 'manageRoles',
    input: z.strictObject({}),
    output: ItemsOf(Role),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => ({ items: (await listRoles(services.db, principal.organizationGuid)).map(toRole) }),
  }),
  defineOperation({
    name: 'create_role',
    title: 'Create a role',
    description: "Creates a role. grants maps capability keys to 'true' or 'false'; omitted, the role grants nothing. Find the keys with list_capabilities.",
    method: 'POST',
    path: '/roles',
    capability: 'manageRoles',
    input: z.strictObject({ name: Name('Role name'), grants: Grants.optional() }),
    output: Role,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const granted = applyGrants([], input.grants ?? {}, principal.organizationType);
      return toRole(
        await insertRole(services.db, { guid: newGuid(), organization_guid: principal.organizationGuid, name: input.name, granted_capabilities: granted }),
      );
    },
  }),
  defineOperation({
    name: 'modify_role',
    title: 'Modify a role',
    description: 'Renames a role and/or changes its grants. grants is merged: only the keys supplied change. Nothing is saved when nothing changes.',
    method: 'PATCH',
    path: '/roles/:roleGuid',
    capability: 'manageRoles',
    input: z.strictObject({ roleGuid: RoleGuid, name: Name('New role name').optional(), grants: Grants.optional() }),
    output: Role,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const role = await findRole(services.db, principal.organizationGuid, input.roleGuid);
      if (!role) throw notFound('Role');
      const granted = applyGrants(role.granted_capabilities, input.grants ?? {}, principal.organizationType);
      const name = input.name ?? role.name;
      const sameGrants = granted.join(',') === [...role.granted_capabilities].sort().join(',');
      if (name === role.name && sameGrants) return toRole(role);
      if (sameGrants) return toRole(await updateRole(services.db, role.guid, { name }));
      return toRole(
        await keepingARoleAdmin(services.db, principal.organizationGuid, (trx) => updateRole(trx, role.guid, { name, granted_capabilities: granted })),
      );
    },
  }),
  defineOperation({
    name: 'delete_role',
    title: 'Delete a role',
    description: 'Deletes a role after moving every user on it to reassignToRoleGuid, so nobody is left without a role.',
    method: 'DELETE',
    path: '/roles/:roleGuid',
    capability: 'manageRoles',
    input: z.strictObject({ roleGuid: RoleGuid, reassignToRoleGuid: Id('Role that receives the users of the deleted role') }),
    output: z.object({ deleted: z.literal(true), reassignedUsers: z.number().int() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      if (input.reassignToRoleGuid === input.roleGuid) {
        throw validationFailed([{ path: 'reassignToRoleGuid', message: 'must name a different role than the one deleted' }]);
      }
      return keepingARoleAdmin(services.db, principal.organizationGuid, async (trx) => {
        const role = await findRole(trx, principal.organizationGuid, input.roleGuid);
        if (!role) throw notFound('Role');
        const target = await findRole(trx, principal.organizationGuid, input.reassignToRoleGuid);
        if (!target) throw notFound('Replacement role (reassignToRoleGuid)');
        const reassignedUsers = await reassignRole(trx, role.guid, target.guid);
        await deleteRole(trx, role.guid);
        return { deleted: true as const, reassignedUsers };
      });
    },
  }),
];
