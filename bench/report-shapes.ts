import type { FastifyInstance } from 'fastify';
import type { ClickhouseStore } from '../src/stores/clickhouse.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** One get_usage_report shape of issue 16: its window's span back from "now", keys, buckets and filters. */
export interface UsageShape {
  span: number;
  groupBy: string[];
  interval?: 'minute' | 'hour' | 'day';
  filters?: Record<string, string>;
  take: number;
}

/** The six report shapes bench:usage and bench:scale time. */
export const usageShapes = (busiestGateway: string): Record<string, UsageShape> => ({
  totals_30d: { span: 30 * DAY, groupBy: [], take: 100 },
  daily_30d: { span: 30 * DAY, groupBy: [], interval: 'day', take: 100 },
  tool_hourly_7d: { span: 7 * DAY, groupBy: ['tool_name'], interval: 'hour', take: 10_000 },
  server_status_30d: { span: 30 * DAY, groupBy: ['inbound_server_guid', 'status'], take: 100 },
  top_users_30d: { span: 30 * DAY, groupBy: ['user_guid'], take: 100 },
  gateway_minutes_1d: { span: DAY, groupBy: [], interval: 'minute', filters: { outbound_gateway_guid: busiestGateway }, take: 10_000 },
});

/**
 * Windows that end at "now" and move back a second each run, as a dashboard
 * refreshing does: a repeated identical query would be partly answered from
 * ClickHouse's query condition cache, which a moving window never hits.
 */
export function movingWindows(now = Date.now()) {
  let run = 0;
  return {
    reset: () => void (run = 0),
    of: (shape: UsageShape) => {
      const toMs = now - 1000 * run++;
      return { fromMs: toMs - shape.span, toMs };
    },
  };
}

/** The request body of a usage shape for one window. */
export const usageBody = (shape: UsageShape, window: { fromMs: number; toMs: number }) => ({
  ...window,
  groupBy: shape.groupBy,
  interval: shape.interval,
  filters: shape.filters,
  take: shape.take,
});

/** What the query_logs shapes of bench:logs and bench:scale need from the seeded rows. */
export interface LogProbe {
  userGuid: string;
  serverGuid: string;
  /** The newest row's time, where the one-hour window ends. */
  windowTo: number;
  nextTrace: () => string;
  /**
   * The workspace's rows the three-filter shape matches: its time is the read back to the
   * page's last match, so a rare pair's page takes several times a common one's
   * (docs/call-logs.md, "Session 38").
   */
  threeFilterRows: number;
}

/** A line telling how common the probe's three-filter pair is among the workspace's `rows`. */
export const describeProbe = (probe: LogProbe, rows: number): string =>
  `three_filters probe: ${probe.threeFilterRows} of the workspace's ${rows} rows (${((100 * probe.threeFilterRows) / rows).toFixed(4)} %)`;

/** Filter values from the middle of the seeded rows, and `traces` trace ids to look up one after another. */
export async function probeLogs(store: Pick<ClickhouseStore, 'client'>, org: string, rows: number, traces: number): Promise<LogProbe> {
  const read = async <T>(query: string, params: Record<string, unknown>) =>
    (await store.client.query({ query, query_params: { org, ...params }, format: 'JSONEachRow' })).json<T>();
  const [probe] = await read<{ user_guid: string; inbound_server_guid: string; created_ms: number | string }>(
    `SELECT user_guid, inbound_server_guid, toUnixTimestamp64Milli(created_at) AS created_ms FROM call_logs
     WHERE organization_guid = {org:String} AND inbound_server_guid != '' ORDER BY created_at DESC LIMIT 1 OFFSET {o:UInt64}`,
    { o: Math.floor(rows / 2) },
  );
  // A different trace on every run: a repeated lookup would be answered from ClickHouse's
  // query condition cache, which a user looking up one trace after another never hits.
  const traceIds = (
    await read<{ trace_id: string }>(
      `SELECT DISTINCT trace_id FROM call_logs WHERE organization_guid = {org:String} AND cityHash64(trace_id) % 1000 = 7 LIMIT {n:UInt32}`,
      { n: traces },
    )
  ).map((r) => r.trace_id);
  const [matching] = await read<{ n: number | string }>(
    `SELECT count() AS n FROM call_logs
     WHERE organization_guid = {org:String} AND user_guid = {u:String} AND inbound_server_guid = {s:String} AND type = 'tool_call'`,
    { u: probe!.user_guid, s: probe!.inbound_server_guid },
  );
  let next = 0;
  return {
    userGuid: probe!.user_guid,
    serverGuid: probe!.inbound_server_guid,
    windowTo: Number(probe!.created_ms),
    nextTrace: () => traceIds[next++ % traceIds.length]!,
    threeFilterRows: Number(matching!.n),
  };
}

/** The seven query_logs shapes; a function is called once per run. */
export const logShapes = (p: LogProbe): Record<string, Record<string, unknown> | (() => Record<string, unknown>)> => ({
  newest_page: {},
  one_filter: { filters: { user_guid: p.userGuid } },
  three_filters: { filters: { user_guid: p.userGuid, inbound_server_guid: p.serverGuid, type: 'tool_call' } },
  trace_id: () => ({ filters: { trace_id: p.nextTrace() } }),
  time_window: { fromMs: p.windowTo - HOUR, toMs: p.windowTo },
  deep_page_50k: { skip: 50_000 },
  detail_take_1000: { includeDetail: true, take: 1000 },
});

/** POSTs an admin operation through the REST route (auth, validation, serialisation included); the body, or throws on a non-200. */
export async function postAdmin(app: FastifyInstance, token: string, url: string, body: unknown): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.body;
}
