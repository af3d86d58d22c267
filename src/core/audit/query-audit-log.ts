import { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';
import { NARROW_WINDOW, queryScoped, timeBounds } from '../logs/clickhouse-query.js';
import { AUDIT_SURFACES } from './audit-record.js';

/** The filters of query_audit_log (contract 8.4). */
export const AUDIT_FILTER_KEYS = ['operation', 'actor_user_guid', 'target_guid', 'outcome', 'surface'] as const;
export type AuditFilterKey = (typeof AUDIT_FILTER_KEYS)[number];

export interface AuditQuery {
  filters: Partial<Record<AuditFilterKey, string>>;
  fromMs?: number | undefined;
  toMs?: number | undefined;
  skip: number;
  take: number;
}

const Count = z.coerce.number();
const AuditRow = z.object({
  guid: z.string(),
  created_ms: Count,
  actor_user_guid: z.string().transform((v) => (v === '' ? null : v)),
  actor_token_prefix: z.string().transform((v) => (v === '' ? null : v)),
  surface: z.enum(AUDIT_SURFACES),
  operation: z.string(),
  target_guids: z.array(z.string()),
  outcome: z.string(),
  status: Count,
  request: z.string().transform((text): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      // A request cut at the size limit is no longer JSON: it is shown as the text it was.
      return text;
    }
  }),
  source_ip: z.string().transform((v) => (v === '' ? null : v)),
  user_agent: z.string().transform((v) => (v === '' ? null : v)),
});

export type AuditItem = Omit<z.output<typeof AuditRow>, 'created_ms'> & { created_at: string; organization: string };

/** The condition of each filter; values are always bound, column names come from this fixed map. */
const FILTER_SQL: Record<AuditFilterKey, string> = {
  operation: 'operation = {f_operation:String}',
  actor_user_guid: 'actor_user_guid = {f_actor_user_guid:String}',
  target_guid: 'has(target_guids, {f_target_guid:String})',
  outcome: 'outcome = {f_outcome:String}',
  surface: 'surface = {f_surface:String}',
};
const LOWERCASE: ReadonlySet<AuditFilterKey> = new Set(['actor_user_guid', 'target_guid']);

/** A page of one workspace's audit records, newest first. */
export async function queryAuditLog(
  store: Pick<ClickhouseStore, 'client'>,
  organizationGuid: string,
  q: AuditQuery,
): Promise<{ items: AuditItem[]; skip: number; take: number; nextSkip: number | null }> {
  const { prewhere, params } = timeBounds(q);
  const where = [...prewhere];
  for (const key of AUDIT_FILTER_KEYS) {
    const value = q.filters[key];
    if (value === undefined) continue;
    where.push(FILTER_SQL[key]);
    params[`f_${key}`] = LOWERCASE.has(key) ? value.toLowerCase() : value;
  }
  const rows = await queryScoped(store, organizationGuid, {
    tag: 'query_audit_log',
    sql: `SELECT toString(guid) AS guid, toUnixTimestamp64Milli(created_at) AS created_ms, actor_user_guid, actor_token_prefix, surface, operation,
            target_guids, outcome, status, request, source_ip, user_agent
          FROM audit_log WHERE ${where.join(' AND ')}
          ORDER BY organization_guid DESC, created_at DESC, guid DESC LIMIT {limit:UInt32} OFFSET {skip:UInt64}`,
    params: { ...params, limit: q.take + 1, skip: q.skip },
    row: AuditRow,
    overLimit: NARROW_WINDOW,
  });
  const items = rows.slice(0, q.take).map(({ created_ms, guid, ...rest }) => ({
    guid,
    created_at: new Date(created_ms).toISOString(),
    organization: organizationGuid,
    ...rest,
  }));
  return { items, skip: q.skip, take: q.take, nextSkip: rows.length > q.take ? q.skip + q.take : null };
}
