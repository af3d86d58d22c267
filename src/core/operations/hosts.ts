import { z } from 'zod';
import type { ConfigDb } from '../../stores/postgres.js';
import { notFound } from '../errors.js';
import { newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import { deleteHost, findHost, insertHost, listHosts, updateHost, type Host as HostRow } from '../repositories/hosts.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, Name, READ_ONLY } from './common.js';

export const Host = z.object({ guid: z.string(), name: z.string(), enabled: z.boolean(), authenticationType: z.string() });
const toHost = (h: HostRow) => ({ guid: h.guid, name: h.name, enabled: h.enabled, authenticationType: h.authentication_type });

const HostGuid = Id('Host guid');

async function loadHost(db: ConfigDb, principal: Principal, guid: string): Promise<HostRow> {
  const host = await findHost(db, principal.organizationGuid, guid);
  if (!host) throw notFound('Host');
  return host;
}

/** enable_host and disable_host: the same rule, saved only on change. */
async function setHostEnabled(db: ConfigDb, principal: Principal, guid: string, enabled: boolean) {
  const host = await loadHost(db, principal, guid);
  if (host.enabled === enabled) return toHost(host);
  return toHost(await updateHost(db, host.guid, { enabled }));
}

export const hostOperations = [
  defineOperation({
    name: 'list_hosts',
    title: 'List hosts',
    description: 'Lists the hosts (apps or agents that connect to gateways) of the workspace.',
    method: 'GET',
    path: '/hosts',
    capability: 'createAndManageApiTokens',
    input: z.strictObject({}),
    output: ItemsOf(Host),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => ({ items: (await listHosts(services.db, principal.organizationGuid)).map(toHost) }),
  }),
  defineOperation({
    name: 'create_host',
    title: 'Create a host',
    description: 'Creates an enabled API-token host. It carries no token: mint one with issue_gateway_token (hostGuid binds the connection to this host).',
    method: 'POST',
    path: '/hosts',
    capability: 'createAndManageApiTokens',
    input: z.strictObject({ name: Name('Host name') }),
    output: Host,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) =>
      toHost(await insertHost(services.db, { guid: newGuid(), organization_guid: principal.organizationGuid, name: input.name })),
  }),
  defineOperation({
    name: 'rename_host',
    title: 'Rename a host',
    description: 'Renames a host. Nothing is saved when the name is already the requested one.',
    method: 'PATCH',
    path: '/hosts/:hostGuid/name',
    capability: 'createAndManageApiTokens',
    input: z.strictObject({ hostGuid: HostGuid, newName: Name('New host name') }),
    output: Host,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      const host = await loadHost(services.db, principal, input.hostGuid);
      if (host.name === input.newName) return toHost(host);
      return toHost(await updateHost(services.db, host.guid, { name: input.newName }));
    },
  }),
  defineOperation({
    name: 'enable_host',
    title: 'Enable a host',
    description: 'Enables a host. Saved only when it changes.',
    method: 'POST',
    path: '/hosts/:hostGuid/enable',
    capability: 'enableDisableHosts',
    input: z.strictObject({ hostGuid: HostGuid }),
    output: Host,
    annotations: CHANGES,
    handler: ({ services, principal }, input) => setHostEnabled(services.db, principal, input.hostGuid, true),
  }),
  defineOperation({
    name: 'disable_host',
    title: 'Disable a host',
    description: 'Disables a host: its connections are refused at the gateway until it is enabled again. Saved only when it changes.',
    method: 'POST',
    path: '/hosts/:hostGuid/disable',
    capability: 'enableDisableHosts',
    input: z.strictObject({ hostGuid: HostGuid }),
    output: Host,
    annotations: DESTROYS,
    handler: ({ services, principal }, input) => setHostEnabled(services.db, principal, input.hostGuid, false),
  }),
  defineOperation({
    name: 'delete_host',
    title: 'Delete a host',
    description: 'Deletes a host for good. Its connections stay, no longer bound to a host (hostGuid null); those of a disabled host stay cut off (disabled).',
    method: 'DELETE',
    path: '/hosts/:hostGuid',
    capability: 'deleteHosts',
    input: z.strictObject({ hostGuid: HostGuid }),
    output: z.object({ deleted: z.literal(true), hostGuid: z.string() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      const host = await loadHost(services.db, principal, input.hostGuid);
      await deleteHost(services.db, host);
      return { deleted: true as const, hostGuid: host.guid };
    },
  }),
];
