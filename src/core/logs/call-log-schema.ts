import { z } from 'zod';

/**
 * The one declaration of the call-log columns (STYLE.md, "Stores"): `call_logs`
 * (the thin row) and `call_log_details` (bodies and headers). The DDL in
 * clickhouse/ stays SQL; test/logs-ddl.test.ts holds this list to the tables as
 * ClickHouse applies them (names and types, both ways). Everything else derives
 * from it: the producers' input type (CallLogInput), the insert column lists and the
 * row encoder (call-log-row.ts), query_logs' columns, filters, row and output
 * schemas (query-logs.ts, operations/logs.ts), the usage report's group keys
 * (usage-report.ts) and the forwarder's rows and attributes (src/forwarder).
 */

/** The log types of contract section 4. */
export const LOG_TYPES = ['tool_call', 'tool_list', 'resource_read', 'prompt_get', 'initialize', 'other'] as const;
export type LogType = (typeof LOG_TYPES)[number];

export const CALL_STATUSES = ['ok', 'error'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/**
 * How a column's value is checked and written from the producer's row, and read
 * back. Absent optional values are stored as '' (text, guids, headers) or 0 (counts).
 */
export type ColumnKind =
  /** The workspace guid: required, first in every sort key. */
  | 'workspace'
  /** The row's UUID: assigned (UUIDv7) when the producer gives none. */
  | 'rowGuid'
  /** The call's time, epoch ms or a Date. */
  | 'time'
  /** Stamped by ClickHouse as the INSERT runs (a column default): never written. */
  | 'serverTime'
  | 'logType'
  | 'status'
  /** Free text, cut at maxChars characters or maxBytes bytes of UTF-8. */
  | 'text'
  /** A non-negative integer (UInt32), rounded and capped. */
  | 'count'
  /** A guid, stored lowercase. */
  | 'guid'
  /** A lowercase hex id of maxChars digits; a random one when absent. */
  | 'hexId'
  /** Headers, stored as JSON text after redaction. */
  | 'headers';

export interface ColumnSpec {
  readonly name: string;
  /** The type as ClickHouse's system.columns reports it (codecs and defaults are the DDL's). */
  readonly type: string;
  /** `key`: in both tables (workspace, guid, time); `thin`: call_logs; `detail`: call_log_details. */
  readonly part: 'key' | 'thin' | 'detail';
  readonly kind: ColumnKind;
  /** The producer's field (CallLogInput); none for a server-stamped column. */
  readonly field?: string;
  /** The producer must give it. */
  readonly required?: boolean;
  readonly maxChars?: number;
  readonly maxBytes?: number;
  /** A query_logs row carries it (and orderByColumn accepts it). */
  readonly returned?: boolean;
  /** A query_logs equality filter. */
  readonly filterable?: boolean;
  /** A get_usage_report groupBy key (which rollups keep it: usage-rollups.ts). */
  readonly groupable?: true;
  /** The OTLP attribute / HEC field the forwarder exports it as. */
  readonly attribute?: string;
}

/** Bodies are stored up to this many bytes (the API shows at most 4 KiB of them). */
export const STORED_DETAIL_LIMIT = 64 * 1024;

const GUID = 'LowCardinality(String)';
const TIME = "DateTime64(3, 'UTC')";

/**
 * The columns in table order (clickhouse/0001, 0002, 0007, 0017, 0018). Guid columns other
 * than `guid` are LowCardinality strings ('' when absent, null in the API).
 */
export const CALL_LOG_SCHEMA = [
  { name: 'organization_guid', type: GUID, part: 'key', kind: 'workspace', field: 'organizationGuid', required: true },
  { name: 'guid', type: 'UUID', part: 'key', kind: 'rowGuid', field: 'guid', returned: true, attribute: 'log.record.uid' },
  { name: 'created_at', type: TIME, part: 'key', kind: 'time', field: 'createdAt', required: true, returned: true },
  { name: 'ingested_at', type: TIME, part: 'thin', kind: 'serverTime' },
  {
    name: 'type',
    type: 'LowCardinality(String)',
    part: 'thin',
    kind: 'logType',
    field: 'type',
    required: true,
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.call.type',
  },
  {
    name: 'method',
    type: 'LowCardinality(String)',
    part: 'thin',
    kind: 'text',
    field: 'method',
    required: true,
    maxChars: 200,
    returned: true,
    attribute: 'mcp.method.name',
  },
  {
    name: 'tool_name',
    type: 'LowCardinality(String)',
    part: 'thin',
    kind: 'text',
    field: 'toolName',
    maxChars: 500,
    returned: true,
    groupable: true,
    attribute: 'gen_ai.tool.name',
  },
  {
    name: 'status',
    type: "Enum8('ok' = 1, 'error' = 2)",
    part: 'thin',
    kind: 'status',
    field: 'status',
    required: true,
    returned: true,
    groupable: true,
    attribute: 'mcp_gateway.call.status',
  },
  {
    name: 'error_message',
    type: 'String',
    part: 'thin',
    kind: 'text',
    field: 'errorMessage',
    maxBytes: 4096,
    returned: true,
    attribute: 'mcp_gateway.error.message',
  },
  /** The failure's kind (clickhouse/0018): the JSON-RPC error code answered, `tool_error`, `cancelled`, `_OTHER`; '' when ok. */
  { name: 'error_type', type: 'LowCardinality(String)', part: 'thin', kind: 'text', field: 'errorType', maxChars: 40, attribute: 'error.type' },
  {
    name: 'duration_ms',
    type: 'UInt32',
    part: 'thin',
    kind: 'count',
    field: 'durationMs',
    required: true,
    returned: true,
    attribute: 'mcp_gateway.call.duration_ms',
  },
  { name: 'request_bytes', type: 'UInt32', part: 'thin', kind: 'count', field: 'requestBytes', returned: true, attribute: 'mcp_gateway.request.bytes' },
  { name: 'response_bytes', type: 'UInt32', part: 'thin', kind: 'count', field: 'responseBytes', returned: true, attribute: 'mcp_gateway.response.bytes' },
  {
    name: 'gateway_connection_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'gatewayConnectionGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.gateway_connection.guid',
  },
  {
    name: 'user_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'userGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.user.guid',
  },
  {
    name: 'outbound_gateway_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'outboundGatewayGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.outbound_gateway.guid',
  },
  {
    name: 'inbound_server_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'inboundServerGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.inbound_server.guid',
  },
  {
    name: 'host_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'hostGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.host.guid',
  },
  {
    name: 'server_container_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'serverContainerGuid',
    returned: true,
    filterable: true,
    attribute: 'mcp_gateway.server_container.guid',
  },
  {
    name: 'team_guid',
    type: GUID,
    part: 'thin',
    kind: 'guid',
    field: 'teamGuid',
    returned: true,
    filterable: true,
    groupable: true,
    attribute: 'mcp_gateway.team.guid',
  },
  // Trace and span ids go out as the records' trace context, not as attributes.
  { name: 'trace_id', type: 'String', part: 'thin', kind: 'hexId', field: 'traceId', maxChars: 32, returned: true, filterable: true },
  { name: 'span_id', type: 'String', part: 'thin', kind: 'hexId', field: 'spanId', maxChars: 16, returned: true, filterable: true },
  /** The host's span (its traceparent's span id), '' when it sent none (clickhouse/0017): the forwarded span's parent. */
  { name: 'parent_span_id', type: 'String', part: 'thin', kind: 'text', field: 'parentSpanId', maxChars: 16 },
  /** The MCP session id, when the call ran in a session (a dictionary since clickhouse/0014). */
  { name: 'session_id', type: 'LowCardinality(String)', part: 'thin', kind: 'text', field: 'sessionId', maxChars: 200, attribute: 'mcp.session.id' },
  /** The host's MCP protocol revision: its session's negotiated one, or 2026-07-28 (clickhouse/0007). */
  {
    name: 'protocol_version',
    type: 'LowCardinality(String)',
    part: 'thin',
    kind: 'text',
    field: 'protocolVersion',
    maxChars: 40,
    returned: true,
    attribute: 'mcp.protocol.version',
  },
  { name: 'request_body', type: 'String', part: 'detail', kind: 'text', field: 'requestBody', maxBytes: STORED_DETAIL_LIMIT },
  { name: 'response_body', type: 'String', part: 'detail', kind: 'text', field: 'responseBody', maxBytes: STORED_DETAIL_LIMIT },
  { name: 'request_headers', type: 'String', part: 'detail', kind: 'headers', field: 'requestHeaders' },
  { name: 'response_headers', type: 'String', part: 'detail', kind: 'headers', field: 'responseHeaders' },
] as const satisfies readonly ColumnSpec[];

type Column = (typeof CALL_LOG_SCHEMA)[number];
export type CallLogColumnName = Column['name'];
/** The names of the columns that match `P` (e.g. `{ filterable: true }`). */
type NamesOf<P> = Extract<Column, P>['name'];

const columns = (keep: (c: ColumnSpec) => boolean): ColumnSpec[] => (CALL_LOG_SCHEMA as readonly ColumnSpec[]).filter(keep);
const namesOf = <N extends string>(keep: (c: ColumnSpec) => boolean): readonly N[] => columns(keep).map((c) => c.name as N);

/** A column's declaration by name. */
export const COLUMN: Readonly<Record<CallLogColumnName, ColumnSpec>> = Object.fromEntries(CALL_LOG_SCHEMA.map((c) => [c.name, c])) as never;

/** The tables' columns, each in table order. */
export const THIN_COLUMNS = namesOf<NamesOf<{ part: 'key' | 'thin' }>>((c) => c.part !== 'detail');
export const DETAIL_COLUMNS = namesOf<NamesOf<{ part: 'key' | 'detail' }>>((c) => c.part !== 'thin');

/**
 * The thin columns the writer inserts, in the order of its rows' values. ingested_at
 * is left out: its column default (now64(3), clickhouse/0004) stamps it on the
 * server when the INSERT runs, which the forwarder's delivery horizon relies on
 * (docs/forwarding.md).
 */
export const THIN_INSERT_COLUMNS = namesOf<Exclude<NamesOf<{ part: 'key' | 'thin' }>, 'ingested_at'>>((c) => c.part !== 'detail' && c.kind !== 'serverTime');
export const DETAIL_INSERT_COLUMNS = DETAIL_COLUMNS;
/** call_log_details' own columns (bodies and headers), after the key columns. */
export const DETAIL_ONLY_COLUMNS = namesOf<NamesOf<{ part: 'detail' }>>((c) => c.part === 'detail');

/** A query_logs row's columns (contract section 4 plus protocol_version), in response order. */
export const RETURNED_COLUMNS = namesOf<NamesOf<{ returned: true }>>((c) => c.returned === true);
/** query_logs' equality filters. */
export const FILTER_COLUMNS = namesOf<NamesOf<{ filterable: true }>>((c) => c.filterable === true);
/** get_usage_report's groupBy keys (contract 8.3). */
export const GROUP_COLUMNS = namesOf<NamesOf<{ groupable: true }>>((c) => c.groupable === true);
/** The columns the forwarder exports, with their attribute names, in table order. */
export const EXPORTED_COLUMNS: readonly (ColumnSpec & { attribute: string })[] = columns((c) => c.attribute !== undefined) as never;

/** Ids are stored lowercase: filters on these compare the caller's value lowercased. */
export const isLowercaseId = (name: string): boolean => ['rowGuid', 'guid', 'hexId', 'workspace'].includes(COLUMN[name as CallLogColumnName]?.kind ?? '');

// ---- The producers' input type ------------------------------------------------

/** The field type of each kind. */
interface KindInput {
  workspace: string;
  rowGuid: string;
  time: Date | number;
  serverTime: never;
  logType: LogType;
  status: CallStatus;
  text: string;
  count: number;
  guid: string;
  hexId: string;
  headers: Record<string, string>;
}
/** Optional text, guids and headers may also be given as null (absent). */
type AbsentAs<K extends ColumnKind> = K extends 'text' | 'guid' | 'headers' ? null : never;
type Written = Extract<Column, { field: string }>;
type RequiredColumn = Extract<Written, { required: true }>;
type OptionalColumn = Exclude<Written, { required: true }>;

/** Every written column's field, typed by its kind. */
export type CallLogFields = { [C in RequiredColumn as C['field']]: KindInput[C['kind']] } & {
  [C in OptionalColumn as C['field']]?: KindInput[C['kind']] | AbsentAs<C['kind']>;
};

// ---- query_logs' schemas ---------------------------------------------------------

/** A returned column's value in a query_logs row: absent optional text and guids are null. */
type ApiValue<C extends Column> = C['kind'] extends 'logType'
  ? LogType
  : C['kind'] extends 'status'
    ? CallStatus
    : C['kind'] extends 'count' | 'time'
      ? number
      : C['kind'] extends 'text' | 'guid'
        ? C extends { required: true }
          ? string
          : string | null
        : string;
/** A query_logs row's columns as read (created_at as epoch ms; the API writes it as ISO text). */
export type ReturnedValues = { [C in Extract<Column, { returned: true }> as C['name']]: ApiValue<C> };

const emptyToNull = (v: string): string | null => (v === '' ? null : v);

/** How query_logs reads a returned column from ClickHouse's JSON ('' means absent). */
export function readSchema(c: ColumnSpec): z.ZodType {
  switch (c.kind) {
    case 'logType':
      return z.enum(LOG_TYPES).catch('other');
    case 'status':
      return z.enum(CALL_STATUSES);
    case 'count':
    case 'time':
      return z.coerce.number();
    case 'text':
    case 'guid':
      return c.required ? z.string() : z.string().transform(emptyToNull);
    default:
      return z.string();
  }
}

/** The column in a query_logs row of the API (its output schema). */
export function apiSchema(c: ColumnSpec): z.ZodType {
  switch (c.kind) {
    case 'logType':
      return z.enum(LOG_TYPES);
    case 'status':
      return z.enum(CALL_STATUSES);
    case 'count':
      return z.number();
    case 'text':
    case 'guid':
      return c.required ? z.string() : z.string().nullable();
    default:
      return z.string();
  }
}
