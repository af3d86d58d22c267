import { settingsClause, type ClickhouseStore } from '../stores/clickhouse.js';
import { epochMs } from './call-log-row.js';

/**
 * The queries every forwarded table (call_logs, audit_log) is read with around a
 * checkpoint: the delivery horizon, whether a workspace has rows after its
 * checkpoint, and when the oldest of them was ingested. Both tables carry
 * `organization_guid`, `guid` and a server-stamped `ingested_at`, and are delivered
 * in (ingested_at, toString(guid)) order.
 */
export interface Checkpoint {
  at: Date;
  guid: string;
}

/** A forwarded table; its workspace column is a LowCardinality(String) (call-log-schema.ts, clickhouse/0006), bound as a String. */
export interface ForwardedTable {
  table: string;
}

/** '2026-11-21 10:00:00.123', the form ClickHouse parses as DateTime64(3). */
export const clickhouseTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '');

/**
 * How long before now() an INSERT that the process list shows as running for
 * `elapsed` seconds may have stamped its rows: `elapsed` is measured from the moment
 * the query was registered, its rows' ingested_at (the column default, now64(3)) is
 * taken after that. The margin covers rounding to milliseconds and the float.
 */
const INSERT_START_MARGIN_MS = 10;

/**
 * The delivery horizon of `tables`: every row of them with an ingested_at before it
 * is committed and visible, and no INSERT can still add one.
 *
 * ingested_at is the server's now64(3) when the INSERT runs (column default,
 * clickhouse/0004 and 0006), so a row not visible yet belongs to an INSERT that is
 * running now (its rows are stamped at or after it started) or that starts later
 * (stamped after this query's now64). The horizon is therefore the start of the
 * oldest running INSERT into any of the tables, or now when there is none, and never
 * later than now minus `settleMs` (kept for what the process list cannot see: a
 * cluster's asynchronous Distributed sends and replication). It must be asked in a
 * query of its own, before the batch is read: the read's view of the table must be
 * taken after it, so that an INSERT finishing in between is seen. One horizon for
 * several tables is the earliest of theirs, so it is safe for each.
 *
 * On chDB too the writer's INSERTs run on a connection of their own, beside this
 * query and the reads, and system.processes lists them (test/forwarder.test.ts pins
 * the rule on both).
 */
export async function deliveryHorizon(store: ClickhouseStore, settleMs: number, tables: readonly string[]): Promise<Date> {
  const result = await store.client.query({
    query: `SELECT toUnixTimestamp64Milli(now64(3)) AS now_ms, count() AS inserts, max(elapsed) AS longest
      FROM system.processes WHERE query_kind = 'Insert' AND multiSearchAnyCaseInsensitive(query, {tables:Array(String)})${settingsClause({ log_comment: 'forwarder.delivery_horizon' })}`,
    query_params: { tables },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ now_ms: string | number; inserts: string | number; longest: number }>();
  const nowMs = Number(row!.now_ms);
  const runningMs = Number(row!.inserts) > 0 ? Math.ceil(row!.longest * 1000) + INSERT_START_MARGIN_MS : 0;
  return new Date(nowMs - Math.max(settleMs, runningMs));
}

/**
 * For each checkpoint, whether its workspace has a row after it and before the
 * horizon: one query for every caught-up cursor of a pass, instead of a lease, a
 * configuration read and an empty batch read for each. Meant for checkpoints that
 * were caught up a pass ago.
 */
export async function haveRowsAfter(
  store: ClickhouseStore,
  from: ForwardedTable,
  checkpoints: readonly (Checkpoint & { organizationGuid: string })[],
  before: Date,
): Promise<boolean[]> {
  if (checkpoints.length === 0) return [];
  const params: Record<string, unknown> = { before: clickhouseTime(before) };
  const conditions = checkpoints.map((c, i) => {
    params[`org${i}`] = c.organizationGuid;
    params[`at${i}`] = clickhouseTime(c.at);
    params[`guid${i}`] = c.guid;
    return `(organization_guid = {org${i}:String} AND ingested_at >= {at${i}:DateTime64(3, 'UTC')} AND (ingested_at, toString(guid)) > ({at${i}:DateTime64(3, 'UTC')}, {guid${i}:String}))`;
  });
  const result = await store.client.query({
    query: `SELECT ${conditions.map((c) => `toUInt8(max(${c}))`).join(', ')} FROM ${from.table}
      WHERE ingested_at < {before:DateTime64(3, 'UTC')} AND (${conditions.join(' OR ')})${settingsClause({ log_comment: `forwarder.have_rows_after.${from.table}` })}`,
    query_params: params,
    format: 'JSONCompact',
  });
  const { data } = (await result.json()) as unknown as { data: (number | string)[][] };
  return checkpoints.map((_c, i) => Number(data[0]?.[i] ?? 0) === 1);
}

/**
 * When the oldest row after the checkpoint was ingested, or null when there is none:
 * the forwarder wakes up exactly when it leaves the settle window instead of on the
 * next poll. Reads one column of the workspace's newest rows (the checkpoint is
 * caught up when this is asked).
 */
export async function oldestPending(store: ClickhouseStore, from: ForwardedTable, organizationGuid: string, after: Checkpoint): Promise<Date | null> {
  const result = await store.client.query({
    query: `SELECT toString(min(ingested_at)), count() FROM ${from.table}
      WHERE organization_guid = {org:String}
        AND ingested_at >= {at:DateTime64(3, 'UTC')}
        AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})${settingsClause({ log_comment: `forwarder.oldest_pending.${from.table}` })}`,
    query_params: { org: organizationGuid, at: clickhouseTime(after.at), guid: after.guid },
    format: 'JSONCompact',
  });
  const { data } = (await result.json()) as unknown as { data: [string, string | number][] };
  const [oldest, count] = data[0] ?? ['', 0];
  return Number(count) > 0 ? new Date(epochMs(oldest)) : null;
}
