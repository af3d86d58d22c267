import { JsonLogsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SCOPE_NAME, SCOPE_VERSION, SERVICE_NAME } from '../../src/forwarder/record-sql.js';
import { hecTime } from './forwarder-reference.js';

/**
 * The forwarded audit records as docs/forwarding.md describes them, written in plain
 * JS from audit_log rows read back from ClickHouse and serialised by the OpenTelemetry
 * exporters' own serializer or JSON.stringify (HEC): the reference
 * test/forwarder-audit.test.ts holds the records ClickHouse writes
 * (src/forwarder/audit-record-sql.ts) to. An independent statement of the mapping.
 */
export interface AuditRow {
  organization_guid: string;
  guid: string;
  created_ms: number;
  ingested_ms: number;
  actor_user_guid: string;
  actor_token_prefix: string;
  surface: string;
  operation: string;
  target_guids: string[];
  outcome: string;
  status: number;
  request: string;
  source_ip: string;
  user_agent: string;
}

type ReadableLogRecord = Parameters<typeof JsonLogsSerializer.serializeRequest>[0][number];

export function auditAttributes(row: AuditRow): Record<string, string | number | string[]> {
  const attrs: Record<string, string | number | string[]> = {
    'log.record.uid': row.guid,
    'event.name': 'svc.admin.audit',
    'mcp_gateway.audit.operation': row.operation,
    'mcp_gateway.audit.surface': row.surface,
    'mcp_gateway.audit.outcome': row.outcome,
    'mcp_gateway.audit.status': row.status,
  };
  if (row.outcome !== 'ok') attrs['error.type'] = row.outcome;
  if (row.actor_user_guid) attrs['mcp_gateway.audit.actor_user_guid'] = row.actor_user_guid;
  if (row.actor_token_prefix) attrs['mcp_gateway.audit.actor_token_prefix'] = row.actor_token_prefix;
  if (row.target_guids.length > 0) attrs['mcp_gateway.audit.target_guids'] = row.target_guids;
  if (row.source_ip) attrs['client.address'] = row.source_ip;
  if (row.user_agent) attrs['user_agent.original'] = row.user_agent;
  attrs['mcp_gateway.audit.request'] = row.request;
  return attrs;
}

export function auditBody(row: AuditRow): string {
  if (row.outcome === 'ok') return `${row.operation} ok via ${row.surface}`;
  return `${row.operation} ${row.status >= 500 ? 'failed' : 'refused'} via ${row.surface}: ${row.outcome} (${row.status})`;
}

/** Severity by outcome: succeeded INFO, refused (4xx) WARN, failed (5xx) ERROR. */
export function auditSeverity(row: AuditRow): { severityNumber: number; severityText: string } {
  if (row.outcome === 'ok') return { severityNumber: 9, severityText: 'INFO' };
  return row.status >= 500 ? { severityNumber: 17, severityText: 'ERROR' } : { severityNumber: 13, severityText: 'WARN' };
}

/** One scope object: the serializer groups records by its identity. */
const SCOPE = { name: SCOPE_NAME, version: SCOPE_VERSION };
const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms - Math.floor(ms / 1000) * 1000) * 1_000_000];
const resources = new Map<string, ReturnType<typeof resourceFromAttributes>>();
const resourceOf = (org: string) => {
  if (!resources.has(org)) resources.set(org, resourceFromAttributes({ 'service.name': SERVICE_NAME, 'mcp_gateway.organization.guid': org }));
  return resources.get(org)!;
};

function logRecord(row: AuditRow): ReadableLogRecord {
  return {
    hrTime: hrTime(row.created_ms),
    hrTimeObserved: hrTime(row.ingested_ms),
    ...auditSeverity(row),
    body: auditBody(row),
    eventName: 'svc.admin.audit',
    resource: resourceOf(row.organization_guid),
    instrumentationScope: SCOPE,
    attributes: auditAttributes(row),
    droppedAttributesCount: 0,
  } as unknown as ReadableLogRecord;
}

export const referenceAuditLogs = (rows: AuditRow[]): string => Buffer.from(JsonLogsSerializer.serializeRequest(rows.map(logRecord))!).toString('utf8');

export const referenceAuditHec = (rows: AuditRow[]): string =>
  rows
    .map((row) => {
      const fields = Object.fromEntries(Object.entries(auditAttributes(row)).map(([k, v]) => [k, Array.isArray(v) ? v : String(v)]));
      const rest = JSON.stringify({ host: SERVICE_NAME, source: SERVICE_NAME, sourcetype: 'svc:admin:audit', event: auditBody(row), fields });
      return `{"time":${hecTime(row.created_ms)},${rest.slice(1)}`;
    })
    .join('\n');
