import {
  attributeParts,
  col,
  concat,
  hecField,
  hecTime,
  jsonText,
  keyValue,
  lit,
  nanos,
  present,
  SEVERITY,
  sql,
  type Attribute,
  type Part,
} from './json-sql.js';
import { SERVICE_NAME, type BodyKind } from './record-sql.js';

/**
 * What the forwarder sends for one admin audit record (table audit_log, contract
 * 8.4), written as ClickHouse SQL like the call-log records (record-sql.ts): an OTLP
 * LogRecord or a HEC event per record, as finished JSON text. This file is the one
 * definition of the audit mapping; the call-log mapping is apart on purpose.
 *
 * - OTLP: `eventName` and the `event.name` attribute are `svc.admin.audit` (the
 *   attribute is what the contract names and what collectors and backends older
 *   than OTLP 1.5 see; `eventName` is the field OTLP 1.5 added for it). Severity by
 *   outcome: INFO when it succeeded, WARN when it was refused (4xx: forbidden,
 *   validation, not found), ERROR when it failed (5xx). Body: one readable line.
 * - HEC: `sourcetype` `svc:admin:audit`, `event` the same line, `fields` the same
 *   attributes as flat strings (the targets a multi-valued field).
 * - The request (already redacted when the record was written) is a string
 *   attribute holding its JSON text: at most 16 KiB, and turning arbitrary JSON into
 *   OTLP AnyValues is not something SQL should do per row.
 *
 * test/forwarder-audit.test.ts holds the text to the OpenTelemetry serializer and
 * JSON.stringify, fed from the same rows.
 */
export const AUDIT_EVENT_NAME = 'svc.admin.audit';
export const AUDIT_SOURCETYPE = 'svc:admin:audit';

const OK = `outcome = 'ok'`;
const FAILED = 'status >= 500';
const CREATED_MS = 'toUnixTimestamp64Milli(created_at)';
const INGESTED_MS = 'toUnixTimestamp64Milli(ingested_at)';

/** The attributes of an audit record, in this order, shared by OTLP logs and HEC fields. The first is always set. */
export const AUDIT_ATTRIBUTES: readonly Attribute[] = [
  { key: 'log.record.uid', value: col('guid'), type: 'string' },
  { key: 'event.name', value: `'${AUDIT_EVENT_NAME}'`, type: 'string' },
  { key: 'mcp_gateway.audit.operation', value: 'operation', type: 'string' },
  { key: 'mcp_gateway.audit.surface', value: 'surface', type: 'string' },
  { key: 'mcp_gateway.audit.outcome', value: 'outcome', type: 'string' },
  { key: 'mcp_gateway.audit.status', value: 'status', type: 'int' },
  // The problem code is the error's class, as the semantic conventions' error.type asks.
  { key: 'error.type', value: 'outcome', type: 'string', when: `NOT ${OK}` },
  { key: 'mcp_gateway.audit.actor_user_guid', value: 'actor_user_guid', type: 'string', when: present('actor_user_guid') },
  { key: 'mcp_gateway.audit.actor_token_prefix', value: 'actor_token_prefix', type: 'string', when: present('actor_token_prefix') },
  { key: 'mcp_gateway.audit.target_guids', value: 'target_guids', type: 'strings', when: 'notEmpty(target_guids)' },
  { key: 'client.address', value: 'source_ip', type: 'string', when: present('source_ip') },
  { key: 'user_agent.original', value: 'user_agent', type: 'string', when: present('user_agent') },
  { key: 'mcp_gateway.audit.request', value: 'request', type: 'string' },
];

const auditAttributeParts = (item: (a: Attribute) => Part[]): Part[] => attributeParts(AUDIT_ATTRIBUTES, item);

/** The body: "create_team ok via rest", "delete_team refused via mcp: forbidden (403)", "... failed via cli: internal_error (500)". */
const AUDIT_BODY = `concat(operation, ' ', multiIf(${OK}, 'ok', ${FAILED}, 'failed', 'refused'), ' via ', surface, if(${OK}, '', concat(': ', outcome, ' (', toString(status), ')')))`;

const severity = (s: keyof typeof SEVERITY) => `"severityNumber":${SEVERITY[s]},"severityText":"${s.toUpperCase()}"`;

/** One OTLP LogRecord: time = created_at, observed = ingested_at, no trace context (an admin operation has none). */
const AUDIT_LOG_RECORD = concat([
  lit('{"timeUnixNano":"'),
  nanos(CREATED_MS),
  lit('","observedTimeUnixNano":"'),
  nanos(INGESTED_MS),
  sql(`multiIf(${OK}, '",${severity('info')}', ${FAILED}, '",${severity('error')}', '",${severity('warn')}')`),
  lit(',"body":{"stringValue":'),
  jsonText(AUDIT_BODY),
  lit(`},"eventName":${JSON.stringify(AUDIT_EVENT_NAME)},"attributes":[`),
  ...auditAttributeParts(keyValue),
  lit('],"droppedAttributesCount":0}'),
]);

/** One HEC event: `event` the body line, `fields` the attributes. */
const AUDIT_HEC_EVENT = concat([
  lit('{"time":'),
  sql(hecTime(CREATED_MS)),
  lit(`,"host":${JSON.stringify(SERVICE_NAME)},"source":${JSON.stringify(SERVICE_NAME)},"sourcetype":${JSON.stringify(AUDIT_SOURCETYPE)},"event":`),
  jsonText(AUDIT_BODY),
  lit(',"fields":{'),
  ...auditAttributeParts(hecField),
  lit('}}'),
]);

/** The body kinds an audit record is sent as: the logs collector's two formats (audit records are not spans). */
export type AuditBodyKind = Exclude<BodyKind, 'otlp_traces'>;

/** The SQL of one audit record in a body of `kind`. */
export const AUDIT_RECORD_SQL: Record<AuditBodyKind, string> = { otlp_logs: AUDIT_LOG_RECORD, hec: AUDIT_HEC_EVENT };
