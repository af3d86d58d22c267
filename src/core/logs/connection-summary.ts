import { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';
import { queryScoped } from './clickhouse-query.js';

export interface RecentCallError {
  createdAt: string;
  inboundServerGuid: string | null;
  toolName: string | null;
  message: string;
  traceId: string;
}

export interface ConnectionCallSummary {
  lastSuccessfulCallAt: string | null;
  recentErrors: RecentCallError[];
}

const LastOk = z.object({ created_ms: z.coerce.number() });
const ErrorRow = z.object({
  created_ms: z.coerce.number(),
  inbound_server_guid: z.string(),
  tool_name: z.string(),
  error_message: z.string(),
  trace_id: z.string(),
});

/**
 * What get_connection shows from the call logs: the time of the connection's
 * last successful call (ISO, or null) and its ten most recent errors, newest first.
 * Both read newest-first in sort-key order and stop early.
 */
export async function connectionCallSummary(clickhouse: ClickhouseStore, organizationGuid: string, connectionGuid: string): Promise<ConnectionCallSummary> {
  const params = { connection: connectionGuid.toLowerCase() };
  const [lastOk, errors] = await Promise.all([
    queryScoped(clickhouse, organizationGuid, {
      tag: 'connection_summary.last_ok',
      sql: `SELECT toUnixTimestamp64Milli(created_at) AS created_ms FROM call_logs PREWHERE organization_guid = {org:String}
        WHERE gateway_connection_guid = {connection:String} AND status = 'ok' ORDER BY created_at DESC LIMIT 1`,
      params,
      row: LastOk,
    }),
    queryScoped(clickhouse, organizationGuid, {
      tag: 'connection_summary.errors',
      sql: `SELECT toUnixTimestamp64Milli(created_at) AS created_ms, inbound_server_guid, tool_name, error_message, trace_id FROM call_logs
        PREWHERE organization_guid = {org:String} WHERE gateway_connection_guid = {connection:String} AND status = 'error'
        ORDER BY organization_guid DESC, created_at DESC, guid DESC LIMIT 10`,
      params,
      row: ErrorRow,
    }),
  ]);
  return {
    lastSuccessfulCallAt: lastOk[0] ? new Date(lastOk[0].created_ms).toISOString() : null,
    recentErrors: errors.map((e) => ({
      createdAt: new Date(e.created_ms).toISOString(),
      inboundServerGuid: e.inbound_server_guid || null,
      toolName: e.tool_name || null,
      message: e.error_message,
      traceId: e.trace_id,
    })),
  };
}
