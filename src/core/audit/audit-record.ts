import { isGuid } from '../ids.js';
import { chEpochMs, truncateUtf8 } from '../logs/call-log-row.js';
import type { SpoolTables } from '../logs/call-log-writer.js';
import type { EncodedRow } from '../logs/encoded-lines.js';
import { randomGuidV7 } from '../logs/random-hex.js';
import { redactInput } from '../redaction.js';

export const AUDIT_SURFACES = ['rest', 'mcp', 'cli'] as const;
export type AuditSurface = (typeof AUDIT_SURFACES)[number];

/** Where an admin request came from: the adapter that received it fills this in. */
export interface RequestOrigin {
  surface: AuditSurface;
  sourceIp: string | null;
  userAgent: string | null;
}

/** One audit record as the executor (or the operator CLI) hands it to the writer. */
export interface AuditRecordInput {
  organizationGuid: string;
  createdAt: number;
  actorUserGuid: string | null;
  actorTokenPrefix: string | null;
  origin: RequestOrigin;
  operation: string;
  targetGuids: readonly string[];
  /** "ok" or the problem code. */
  outcome: string;
  status: number;
  /** The operation's input; redacted here, whatever the caller passed. */
  request: unknown;
}

/** Columns in insert order; ingested_at is stamped by the server (column default). */
export const AUDIT_INSERT_COLUMNS = [
  'organization_guid',
  'guid',
  'created_at',
  'actor_user_guid',
  'actor_token_prefix',
  'surface',
  'operation',
  'target_guids',
  'outcome',
  'status',
  'request',
  'source_ip',
  'user_agent',
] as const;

export const AUDIT_TABLES: SpoolTables = { format: 'JSONCompactEachRow', thin: { table: 'audit_log', columns: AUDIT_INSERT_COLUMNS } };

/** A request's recorded input is cut here: the audit log is not a place for megabytes. */
const MAX_REQUEST_BYTES = 16 * 1024;
const MAX_TEXT = 512;

/** Encodes one audit record as a JSONCompactEachRow line, redacting its request. */
export function encodeAuditRecord(r: AuditRecordInput): EncodedRow {
  const org = r.organizationGuid && isGuid(r.organizationGuid) ? r.organizationGuid.toLowerCase() : '';
  const request = truncateUtf8(JSON.stringify(redactInput(r.request) ?? {}), MAX_REQUEST_BYTES).text;
  const targets = [...new Set(r.targetGuids.filter(isGuid).map((g) => g.toLowerCase()))];
  const thin = JSON.stringify([
    org,
    randomGuidV7(),
    chEpochMs(r.createdAt),
    r.actorUserGuid ?? '',
    r.actorTokenPrefix ?? '',
    r.origin.surface,
    r.operation,
    targets,
    r.outcome,
    r.status,
    request,
    truncateUtf8(String(r.origin.sourceIp ?? ''), MAX_TEXT).text,
    truncateUtf8(String(r.origin.userAgent ?? ''), MAX_TEXT).text,
  ]);
  return { thin: `${thin}\n`, detail: null };
}

/** A field naming one resource: `guid`, `id`, or a name ending in Guid or Id (`tokenId`, `connectionGuid`). */
const ONE_ID_FIELD = /^(guid|id)$|(Guid|Id)$/;
/** A field naming several: a list, or the comma-separated text set_user_teams and invite_user take (`teamGuids`). */
const ID_LIST_FIELD = /(Guids|Ids)$/;

/**
 * The guids an operation names: its guid-shaped inputs and those of what it created or
 * changed, by the same field rule on both sides (a created user is invite_user's
 * `userGuid`, a provisioned connection issue_gateway_token's `connectionGuid`, a
 * workspace create-workspace's `organizationGuid`), so each is found by its guid.
 */
export function targetGuidsOf(input: Record<string, unknown>, result: unknown): string[] {
  const out: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string' && isGuid(v)) out.push(v);
  };
  const collect = (fields: Record<string, unknown>) => {
    for (const [key, value] of Object.entries(fields)) {
      if (ONE_ID_FIELD.test(key)) add(value);
      else if (ID_LIST_FIELD.test(key)) {
        if (Array.isArray(value)) value.forEach(add);
        else if (typeof value === 'string') value.split(',').forEach((v) => add(v.trim()));
      }
    }
  };
  collect(input);
  if (result && typeof result === 'object' && !Array.isArray(result)) collect(result as Record<string, unknown>);
  return [...new Set(out)];
}
