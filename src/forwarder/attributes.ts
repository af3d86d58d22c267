import { integer, present, type CallLogRow } from './call-log-row.js';

/**
 * The attributes of one forwarded call, shared by OTLP logs, OTLP spans and HEC
 * fields. Names follow the OpenTelemetry semantic conventions for MCP where they
 * exist (mcp.method.name, gen_ai.tool.name, mcp.session.id, gen_ai.operation.name,
 * error.type); the row's own ids and figures go under `mcp_gateway.`. The row guid is
 * `log.record.uid`, so a duplicate delivery is recognisable as such.
 */
export type AttributeValue = string | number;

const GUID_ATTRIBUTES: [keyof CallLogRow, string][] = [
  ['gateway_connection_guid', 'mcp_gateway.gateway_connection.guid'],
  ['user_guid', 'mcp_gateway.user.guid'],
  ['outbound_gateway_guid', 'mcp_gateway.outbound_gateway.guid'],
  ['inbound_server_guid', 'mcp_gateway.inbound_server.guid'],
  ['host_guid', 'mcp_gateway.host.guid'],
  ['server_container_guid', 'mcp_gateway.server_container.guid'],
  ['team_guid', 'mcp_gateway.team.guid'],
];

export const SERVICE_NAME = 'mcp-gateway-manager';

export function callAttributes(row: CallLogRow): Record<string, AttributeValue> {
  const attrs: Record<string, AttributeValue> = { 'log.record.uid': row.guid };
  const method = present(row.method);
  const tool = present(row.tool_name);
  const session = present(row.session_id);
  if (method) attrs['mcp.method.name'] = method;
  if (method === 'tools/call') attrs['gen_ai.operation.name'] = 'execute_tool';
  if (tool) attrs['gen_ai.tool.name'] = tool;
  if (session) attrs['mcp.session.id'] = session;
  if (row.status === 'error') attrs['error.type'] = method === 'tools/call' ? 'tool_error' : '_OTHER';
  attrs['mcp_gateway.call.type'] = row.type;
  attrs['mcp_gateway.call.status'] = row.status;
  attrs['mcp_gateway.call.duration_ms'] = integer(row.duration_ms);
  attrs['mcp_gateway.request.bytes'] = integer(row.request_bytes);
  attrs['mcp_gateway.response.bytes'] = integer(row.response_bytes);
  const error = present(row.error_message);
  if (error) attrs['mcp_gateway.error.message'] = error;
  for (const [column, key] of GUID_ATTRIBUTES) {
    const value = present(row[column]);
    if (value) attrs[key] = value;
  }
  return attrs;
}

/** The span name the MCP conventions ask for: "{mcp.method.name} {target}" (the call type when there is no method). */
export function spanName(row: CallLogRow): string {
  const method = present(row.method) ?? row.type;
  const tool = present(row.tool_name);
  return method && tool ? `${method} ${tool}` : method || (tool ?? '');
}

/** The log body: one readable line per call (rows are thin: no request or response body). */
export function logBody(row: CallLogRow): string {
  const what = spanName(row);
  const took = `${integer(row.duration_ms)} ms`;
  if (row.status === 'error') return `${what} failed after ${took}${present(row.error_message) ? `: ${row.error_message}` : ''}`;
  return `${what} ok in ${took}`;
}
