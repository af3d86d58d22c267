import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';

const tracer = trace.getTracer('call-logs');

const NETWORK_ERROR = /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|socket hang up/i;

export interface ScopedQuery<S extends z.ZodType> {
  /** A tag for system.query_log (log_comment) and the span name. */
  tag: string;
  /** SQL with `{name:Type}` placeholders only; it must filter on `organization_guid = {org:String}`. */
  sql: string;
  /** Values of the placeholders other than `org`. */
  params?: Record<string, unknown>;
  /** Each result row is checked against this schema. */
  row: S;
  /** ClickHouse settings that bound the query (max_execution_time, max_memory_usage, ...). */
  settings?: Record<string, string | number>;
}

/**
 * The one way call-log code reads ClickHouse. The query is scoped to the
 * workspace first: `org` is bound from the caller's workspace and a query that
 * does not filter on it is refused. Values are bound as `{name:Type}` parameters,
 * never spliced into the SQL; rows are validated with zod; the query is tagged
 * (log_comment), traced, and retried once on a network error only.
 */
export async function queryScoped<S extends z.ZodType>(
  store: Pick<ClickhouseStore, 'client'>,
  organizationGuid: string,
  q: ScopedQuery<S>,
): Promise<z.output<S>[]> {
  if (!q.sql.includes('organization_guid = {org:String}')) throw new Error(`query ${q.tag} is not scoped to a workspace`);
  return tracer.startActiveSpan(`clickhouse ${q.tag}`, async (span) => {
    try {
      const rows = await withNetworkRetry(async () => {
        // Column names once, then one array per row, instead of JSONEachRow's names in every
        // row: a 1000-row page took about 8 % less time (20.8 -> 19.2 ms, alternating runs).
        const result = await store.client.query({
          query: q.sql,
          query_params: { ...q.params, org: organizationGuid },
          format: 'JSONCompactEachRowWithNames',
          clickhouse_settings: { ...q.settings, log_comment: q.tag },
        });
        return result.json<unknown[]>();
      });
      const names = (rows[0] ?? []) as string[];
      span.setAttribute('db.response.returned_rows', Math.max(0, rows.length - 1));
      const parsed: z.output<S>[] = new Array(Math.max(0, rows.length - 1));
      for (let r = 1; r < rows.length; r++) {
        const values = rows[r]!;
        const record: Record<string, unknown> = {};
        for (let c = 0; c < names.length; c++) record[names[c]!] = values[c];
        parsed[r - 1] = q.row.parse(record);
      }
      return parsed;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

async function withNetworkRetry<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!NETWORK_ERROR.test(String((err as { code?: string }).code ?? '') + ' ' + String((err as Error).message))) throw err;
    return fn();
  }
}

/** An epoch-ms value as ClickHouse JSON returns it (a number from chDB, a quoted string from a server). */
export const toMs = (v: unknown): number => Number(v);

/**
 * The PREWHERE conditions every workspace-scoped read starts with: the workspace,
 * then the inclusive created_at bounds when given (the sort key's prefix).
 */
export function timeBounds(q: { fromMs?: number | undefined; toMs?: number | undefined }): { prewhere: string[]; params: Record<string, unknown> } {
  const prewhere = ['organization_guid = {org:String}'];
  const params: Record<string, unknown> = {};
  if (q.fromMs !== undefined) {
    prewhere.push(`created_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
    params.fromMs = q.fromMs;
  }
  if (q.toMs !== undefined) {
    prewhere.push(`created_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
    params.toMs = q.toMs;
  }
  return { prewhere, params };
}
