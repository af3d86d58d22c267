import { z } from 'zod';
import type { ConfigDb } from '../../stores/postgres.js';
import { notFound } from '../errors.js';
import { isGuid } from '../ids.js';
import { connectionCallSummary } from '../logs/connection-summary.js';
import { defineOperation, type Principal } from '../operation.js';
import { countReachableServers } from '../repositories/assignments.js';
import { findConnection, findConnectionDetail, listConnections, setConnectionEnabled, type Connection as ConnectionRow } from '../repositories/connections.js';
import { CHANGES, DESTROYS, Id, IsoTime, ItemsOf, READ_ONLY } from './common.js';

export const Connection = z.object({
  guid: z.string(),
  name: z.string(),
  enabled: z.boolean(),
  gatewayGuid: z.string(),
  hostGuid: z.string().nullable(),
  creatorGuid: z.string(),
});
const toConnection = (c: ConnectionRow) => ({
  guid: c.guid,
  name: c.name,
  enabled: c.enabled,
  gatewayGuid: c.gateway_guid,
  hostGuid: c.host_guid,
  creatorGuid: c.creator_guid,
});

const RecentError = z.object({
  createdAt: IsoTime,
  inboundServerGuid: z.string().nullable(),
  toolName: z.string().nullable(),
  message: z.string(),
  traceId: z.string().nullable(),
});
export type RecentError = z.infer<typeof RecentError>;

const ConnectionDetail = Connection.extend({
  gatewayName: z.string(),
  hostName: z.string().nullable(),
  creatorEmail: z.string().nullable(),
  serverCount: z.number().int(),
  lastSuccessfulCallAt: IsoTime.nullable(),
  recentErrors: z.array(RecentError).describe('Newest first, at most 10'),
});

const ConnectionGuid = Id('Connection guid');

/** A list filter must be an id; anything else is a mistake worth naming (it could match nothing). */
const FilterGuid = (description: string) => z.string().refine(isGuid, 'not an id of this service').optional().describe(description);

async function loadConnection(db: ConfigDb, principal: Principal, guid: string): Promise<ConnectionRow> {
  const connection = await findConnection(db, principal.organizationGuid, guid);
  if (!connection) throw notFound('Connection');
  return connection;
}

/** enable_connection and disable_connection: the same rule, saved only on change. */
async function setEnabled(db: ConfigDb, principal: Principal, guid: string, enabled: boolean) {
  const connection = await loadConnection(db, principal, guid);
  if (connection.enabled === enabled) return toConnection(connection);
  return toConnection(await setConnectionEnabled(db, connection.guid, enabled));
}

export const connectionOperations = [
  defineOperation({
    name: 'list_connections',
    title: 'List connections',
    description:
      "Lists the workspace's connections (a host's or user's link to a gateway, created by issue_gateway_token). The filters hostGuid, gatewayGuid and userGuid (the establishing user) combine.",
    method: 'GET',
    path: '/connections',
    capability: 'enableDisableConnections',
    input: z.strictObject({
      hostGuid: FilterGuid('Only connections bound to this host'),
      gatewayGuid: FilterGuid('Only connections to this gateway'),
      userGuid: FilterGuid('Only connections established by this user'),
    }),
    output: ItemsOf(Connection),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => ({ items: (await listConnections(services.db, principal.organizationGuid, input)).map(toConnection) }),
  }),
  defineOperation({
    name: 'get_connection',
    title: 'Get a connection',
    description:
      'Returns one connection with its gateway and host names, the establishing user, the number of servers it carries, its last successful call and its recent errors.',
    method: 'GET',
    path: '/connections/:connectionGuid',
    capability: 'enableDisableConnections',
    input: z.strictObject({ connectionGuid: ConnectionGuid }),
    output: ConnectionDetail,
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const c = await findConnectionDetail(services.db, principal.organizationGuid, input.connectionGuid);
      if (!c) throw notFound('Connection');
      const [serverCount, activity] = await Promise.all([
        countReachableServers(services.db, principal.organizationGuid, c.gateway_guid),
        services.callLogs.catchUp().then(() => connectionCallSummary(services.clickhouse, principal.organizationGuid, c.guid)),
      ]);
      return {
        ...toConnection(c),
        gatewayName: c.gateway_name,
        hostName: c.host_name,
        creatorEmail: c.creator_email,
        serverCount,
        lastSuccessfulCallAt: activity.lastSuccessfulCallAt,
        recentErrors: activity.recentErrors,
      };
    },
  }),
  defineOperation({
    name: 'disable_connection',
    title: 'Disable a connection',
    description: 'Cuts a connection off without deleting it: the gateway refuses its token until it is enabled again. Saved only when it changes.',
    method: 'POST',
    path: '/connections/:connectionGuid/disable',
    capability: 'enableDisableConnections',
    input: z.strictObject({ connectionGuid: ConnectionGuid }),
    output: Connection,
    annotations: DESTROYS,
    handler: ({ services, principal }, input) => setEnabled(services.db, principal, input.connectionGuid, false),
  }),
  defineOperation({
    name: 'enable_connection',
    title: 'Enable a connection',
    description: 'Enables a connection again. Saved only when it changes.',
    method: 'POST',
    path: '/connections/:connectionGuid/enable',
    capability: 'enableDisableConnections',
    input: z.strictObject({ connectionGuid: ConnectionGuid }),
    output: Connection,
    annotations: CHANGES,
    handler: ({ services, principal }, input) => setEnabled(services.db, principal, input.connectionGuid, true),
  }),
];
