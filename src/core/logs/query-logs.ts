import { z } from 'zod';
import type { ClickhouseStore } from '../../stores/clickhouse.js';
import { truncateUtf8 } from './call-log-row.js';
import { COLUMN, DETAIL_ONLY_COLUMNS, FILTER_COLUMNS, isLowercaseId, readSchema, RETURNED_COLUMNS, type ReturnedValues } from './call-log-schema.js';
import { NARROW_WINDOW, queryScoped, timeBounds } from './clickhouse-query.js';
import { objectLiteralBuilder } from './object-literal.js';

/** Columns of a query_logs row (contract section 4, plus protocol_version), in response order (call-log-schema.ts). */
export const LOG_COLUMNS = RETURNED_COLUMNS;
export type LogColumn = (typeof LOG_COLUMNS)[number];

/** The columns query_logs filters on by equality (call-log-schema.ts). */
export { FILTER_COLUMNS };
export type FilterColumn = (typeof FILTER_COLUMNS)[number];

/** includeDetail shows at most this many bytes of each body and header blob. */
export const DETAIL_LIMIT_BYTES = 4096;

export interface LogQuery {
  filters: Partial<Record<FilterColumn, string>>;
  fromMs?: number | undefined;
  toMs?: number | undefined;
  orderByColumn: LogColumn;
  orderByDirection: 'asc' | 'desc';
  skip: number;
  take: number;
  includeDetail: boolean;
}

/**
 * Where a returned column is read from: created_at as epoch ms (created_ms), the
 * others as themselves. No alias may reuse a column name: ClickHouse would
 * substitute it into WHERE and ORDER BY.
 */
const selected = (c: LogColumn): { expr: string; alias: string } =>
  c === 'created_at' ? { expr: 'toUnixTimestamp64Milli(created_at) AS created_ms', alias: 'created_ms' } : { expr: c, alias: c };

type ThinValues = Omit<ReturnedValues, 'created_at'> & { created_ms: number };
const ThinRow = z.object(Object.fromEntries(LOG_COLUMNS.map((c) => [selected(c).alias, readSchema(COLUMN[c])]))) as unknown as z.ZodType<ThinValues>;
const SELECT_THIN = LOG_COLUMNS.map((c) => selected(c).expr).join(', ');

/** The detail blobs includeDetail adds (call_log_details' own columns: bodies and headers). */
const DETAIL_BLOBS = DETAIL_ONLY_COLUMNS;
type DetailBlob = (typeof DETAIL_BLOBS)[number];
const Count = z.coerce.number();
const DetailRow = z.object({
  guid: z.string(),
  ...Object.fromEntries(
    DETAIL_BLOBS.flatMap((c) => [
      [`${c}_head`, z.string()],
      [`${c}_bytes`, Count],
    ]),
  ),
}) as unknown as z.ZodType<{ guid: string } & Record<`${DetailBlob}_head`, string> & Record<`${DetailBlob}_bytes`, number>>;

export type LogRow = Omit<ThinValues, 'created_ms'> & { created_at: string; detail_truncated?: boolean } & Partial<Record<DetailBlob, string | null>>;

/** The returned columns after guid and created_at, in response order. */
const OTHER_COLUMNS = LOG_COLUMNS.filter((c): c is Exclude<LogColumn, 'guid' | 'created_at'> => c !== 'guid' && c !== 'created_at');

/**
 * A page row as the API returns it: guid and created_at first, then the other columns
 * in response order, as one object literal (objectLiteralBuilder) made from the column
 * list.
 */
const itemFromRow = objectLiteralBuilder<(row: ThinValues, iso: (ms: number) => string) => LogRow>(
  ['row', 'iso'],
  [['guid', 'row.guid'], ['created_at', 'iso(row.created_ms)'], ...OTHER_COLUMNS.map((c) => [c, `row[${JSON.stringify(c)}]`] as const)],
);
const isoOf = (ms: number): string => new Date(ms).toISOString();
const itemOf = (row: ThinValues): LogRow => itemFromRow(row, isoOf);

export interface LogPage {
  items: LogRow[];
  skip: number;
  take: number;
  nextSkip: number | null;
}

// Ids are stored lowercase; equality on hex and guids ignores the caller's case.
const normalize = (column: FilterColumn, value: string): string => (isLowercaseId(column) ? value.toLowerCase() : value);

/**
 * A user's calls to one server, as the pair's bloom filter (clickhouse/0020) reads them:
 * its expression, equal to the pair's hash. The user's and the server's own filters skip
 * nothing where each is common, and a rare pair's page read every row back to its last match.
 */
export const USER_SERVER_PAIR = 'cityHash64(user_guid, inbound_server_guid) = cityHash64({f_user_guid:String}, {f_inbound_server_guid:String})';

/**
 * A trace's calls, within the hours it has calls in (clickhouse/0021): its id says
 * nothing of when, and its hours' rows are a few granules where the whole range is
 * thousands. GLOBAL: on a cluster the hours are looked up once, by the node that asks.
 */
export const TRACE_HOURS =
  'toStartOfHour(created_at) GLOBAL IN (SELECT hour FROM call_log_trace_hours WHERE organization_guid = {org:String} AND trace_hash = xxHash32({f_trace_id:String}))';

/** PREWHERE (workspace and time, the sort key's prefix) and WHERE (filters) with their parameters, and how many filters the caller gave. */
function conditions(q: LogQuery): { prewhere: string[]; where: string[]; params: Record<string, unknown>; filters: number } {
  const { prewhere, params } = timeBounds(q);
  const where: string[] = [];
  for (const column of FILTER_COLUMNS) {
    const value = q.filters[column];
    if (value === undefined) continue;
    // Column names come from the fixed list above; values are always bound.
    where.push(`${column} = {f_${column}:String}`);
    params[`f_${column}`] = normalize(column, value);
  }
  const filters = where.length;
  if (q.filters.user_guid !== undefined && q.filters.inbound_server_guid !== undefined) where.push(USER_SERVER_PAIR);
  if (q.filters.trace_id !== undefined) where.push(TRACE_HOURS);
  return { prewhere, where, params, filters };
}

const clause = (keyword: string, parts: string[]): string => (parts.length ? `${keyword} ${parts.join(' AND ')}` : '');
/** Workspace and time first, then the filters; ClickHouse moves the cheap part to PREWHERE itself (measured faster than an explicit PREWHERE). */
const whereAll = (prewhere: string[], where: string[]): string => clause('WHERE', [...prewhere, ...where]);

/** The narrowest time window a created_at-ordered page is looked for in; an empty window widens this many times. */
const FIRST_WINDOW_MS = 3_600_000;
const WINDOW_GROWTH = 8;
/** Past this the whole range is read: a page takes one or two queries as a rule, seven at most. */
const LAST_WINDOW_MS = 30 * 86_400_000;
/** Needle filters match a handful of rows: a window never fills, so the whole range is read at once (the trace's hours, the span's bloom filter skip the rest). */
const NEEDLE_FILTERS: readonly FilterColumn[] = ['trace_id', 'span_id'];

/** How much wider the first window is for each filter: a filter keeps a fraction of the rows, a guid one a small fraction. */
const FILTER_WIDENING = 4;

/**
 * The first window: an hour per thousand rows the page needs (skip + take + 1), at
 * least an hour, and FILTER_WIDENING times wider for each filter. A deep page then
 * usually takes one query in a busy workspace, and so does a filtered one; the
 * window's width costs little by itself (the read stops after the page), only the
 * parts it reaches, where a second query costs a whole read again.
 */
function firstWindowMs(needed: number, filters: number): number {
  return FIRST_WINDOW_MS * Math.max(1, Math.ceil(needed / 1000)) * FILTER_WIDENING ** filters;
}

/**
 * How much wider the next window is: WINDOW_GROWTH after an empty window (its
 * count is unknown when skip passed it), else by the density of matches just
 * seen, with a 2x margin, so a sparse filter does not walk through every size.
 */
function growth(found: number, limit: number, skip: number): number {
  if (found === 0) return WINDOW_GROWTH;
  // The window held skip + found matches; the page needs skip + limit.
  return Math.min(64, Math.max(4, (2 * (skip + limit)) / (skip + found)));
}

/** Whether a created_at-ordered query is worth trying in narrow windows first. */
function windowable(q: LogQuery): boolean {
  if (NEEDLE_FILTERS.some((c) => q.filters[c] !== undefined)) return false;
  // Ascending without fromMs has no known starting point (the oldest row could be months back).
  return q.orderByDirection === 'desc' || q.fromMs !== undefined;
}

/**
 * The far edge of a window of `windowMs` starting where the order starts (toMs or
 * now for desc, fromMs for asc), or null when the window reaches past the
 * query's own bound (then the query's bounds alone apply).
 */
function edgeOf(q: LogQuery, windowMs: number): number | null {
  if (windowMs > LAST_WINDOW_MS) return null;
  if (q.orderByDirection === 'desc') {
    const edge = (q.toMs ?? Date.now()) - windowMs;
    return q.fromMs !== undefined && edge <= q.fromMs ? null : edge;
  }
  const edge = q.fromMs! + windowMs;
  return q.toMs !== undefined && edge >= q.toMs ? null : edge;
}

/**
 * Runs query_logs for one workspace. The interface pages by skip/take; inside,
 * a page ordered by created_at (the default and the common case) is read from a
 * time window next to where the order starts (the newest rows for desc, fromMs
 * for asc), widened by WINDOW_GROWTH until it holds skip + take + 1 matching rows
 * or covers the whole range. A window reads the parts of its own days only (the
 * cost of a read grows with the parts it touches, measured about 1 ms each), and
 * since every row on the near side of the window's edge is inside it, the first
 * skip + take + 1 rows of the window are those of the whole range: the page is
 * exact. Other orders read the whole range with LIMIT/OFFSET.
 */
export async function queryLogs(store: Pick<ClickhouseStore, 'client'>, organizationGuid: string, q: LogQuery): Promise<LogPage> {
  const { prewhere, where, params, filters } = conditions(q);
  const dir = q.orderByDirection === 'asc' ? 'ASC' : 'DESC';
  const limit = q.take + 1;
  const pageParams = { ...params, limit, skip: q.skip };
  let rows: ThinValues[] = [];
  if (q.orderByColumn === 'created_at') {
    // The whole sort key, workspace first, so ClickHouse reads in order and stops after the page
    // (measured: an expression such as toString(guid) here disables that and costs 3-5x).
    // Ties on created_at break on the guid in ClickHouse's UUID order (low 64 bits first).
    const order = `ORDER BY organization_guid ${dir}, created_at ${dir}, guid ${dir}`;
    const cmp = dir === 'DESC' ? '>=' : '<=';
    const read = (edgeMs: number | null) =>
      queryScoped(store, organizationGuid, {
        tag: edgeMs === null ? 'query_logs.page' : 'query_logs.window',
        sql: `SELECT ${SELECT_THIN} FROM call_logs ${whereAll(edgeMs === null ? prewhere : [...prewhere, `created_at ${cmp} fromUnixTimestamp64Milli({edgeMs:Int64}, 'UTC')`], where)} ${order} LIMIT {limit:UInt32} OFFSET {skip:UInt64}`,
        params: edgeMs === null ? pageParams : { ...pageParams, edgeMs },
        row: ThinRow,
        overLimit: NARROW_WINDOW,
      });
    for (
      let windowMs = windowable(q) ? firstWindowMs(q.skip + limit, filters) : Infinity;
      ;
      windowMs = Math.ceil(windowMs * growth(rows.length, limit, q.skip))
    ) {
      const edge = edgeOf(q, windowMs);
      rows = await read(edge);
      if (edge === null || rows.length === limit) break;
    }
  } else {
    // The column name comes from the validated enum, never from free text. A UUID is
    // ordered by its text, as returned: ClickHouse orders UUIDs by their low 64 bits first.
    // Its 16 bytes in written order (UUIDToNum) sort as its text does, without making the text.
    const column = COLUMN[q.orderByColumn].kind === 'rowGuid' ? `UUIDToNum(${q.orderByColumn})` : q.orderByColumn;
    rows = await queryScoped(store, organizationGuid, {
      tag: 'query_logs.page',
      sql: `SELECT ${SELECT_THIN} FROM call_logs ${whereAll(prewhere, where)} ORDER BY ${column} ${dir}, created_at ${dir}, guid ${dir} LIMIT {limit:UInt32} OFFSET {skip:UInt64}`,
      params: pageParams,
      row: ThinRow,
      overLimit: NARROW_WINDOW,
    });
  }
  const hasMore = rows.length > q.take;
  const page = rows.slice(0, q.take);
  const items = page.map(itemOf);
  if (q.includeDetail && page.length > 0) {
    // Only an unfiltered page in created_at order holds every row of its time range.
    const wholeRange = q.orderByColumn === 'created_at' && Object.keys(q.filters).length === 0;
    await attachDetail(store, organizationGuid, page, items, !wholeRange);
  }
  return { items, skip: q.skip, take: q.take, nextSkip: hasMore ? q.skip + q.take : null };
}

/**
 * Adds bodies and headers (at most 4 KiB each, cut on a character boundary) to a page's rows.
 * An unfiltered page in created_at order is every row of its time range, so the range alone
 * finds its details (rows tied at the range's edges are ignored below); any other page
 * (filtered, or ordered by another column and so spread in time) also names its guids.
 */
async function attachDetail(
  store: Pick<ClickhouseStore, 'client'>,
  organizationGuid: string,
  page: { guid: string; created_ms: number }[],
  items: LogRow[],
  nameGuids: boolean,
): Promise<void> {
  const times = page.map((r) => r.created_ms);
  // Aliases differ from column names (ClickHouse would substitute them); at most 4096 characters leave the engine.
  const blob = (c: string) => `substringUTF8(${c}, 1, ${DETAIL_LIMIT_BYTES}) AS ${c}_head, length(${c}) AS ${c}_bytes`;
  const details = await queryScoped(store, organizationGuid, {
    tag: 'query_logs.detail',
    sql: `SELECT guid, ${DETAIL_BLOBS.map(blob).join(', ')}
      FROM call_log_details
      WHERE organization_guid = {org:String} AND created_at >= fromUnixTimestamp64Milli({minMs:Int64}, 'UTC') AND created_at <= fromUnixTimestamp64Milli({maxMs:Int64}, 'UTC')
      ${nameGuids ? 'AND guid IN {guids:Array(UUID)}' : ''}`,
    params: { minMs: Math.min(...times), maxMs: Math.max(...times), ...(nameGuids ? { guids: page.map((r) => r.guid) } : {}) },
    row: DetailRow,
    overLimit: NARROW_WINDOW,
  });
  const byGuid = new Map(details.map((d) => [d.guid, d]));
  for (const item of items) {
    const d = byGuid.get(item.guid);
    let truncated = false;
    for (const c of DETAIL_BLOBS) {
      const storedBytes = d?.[`${c}_bytes`] ?? 0;
      const head = d?.[`${c}_head`] ?? '';
      // A blob of at most the limit's bytes came whole (its head is the first DETAIL_LIMIT_BYTES characters).
      if (storedBytes === 0) item[c] = null;
      else if (storedBytes <= DETAIL_LIMIT_BYTES) item[c] = head;
      else {
        truncated = true;
        item[c] = truncateUtf8(head, DETAIL_LIMIT_BYTES).text;
      }
    }
    item.detail_truncated = truncated;
  }
}
