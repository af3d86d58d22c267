import type { ClickhouseStore } from '../stores/clickhouse.js';
import { CALL_LOG_COLUMNS, epochMs, type CallLogRow } from './call-log-row.js';
import { joinRecords, type EncodedBatch } from './encoded-batch.js';
import { RECORD_SQL, envelopeOf, type BodyKind } from './record-sql.js';

/**
 * Reads the next batch of a workspace's call logs after a checkpoint, in
 * (ingested_at, toString(guid)) order, never past a delivery horizon: a time below
 * which no row can still appear (see `deliveryHorizon`), so the checkpoint never
 * moves past a row that is not visible yet.
 */
export interface Checkpoint {
  at: Date;
  guid: string;
}

/** '2026-11-21 10:00:00.123', the form ClickHouse parses as DateTime64(3). */
export const clickhouseTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '');

// Every column but the workspace (the query fixes it), each through toString() so the
// physical types do not matter and no value is NULL. No aliases: in ClickHouse an
// alias named like a column would shadow it in WHERE.
const READ_COLUMNS = CALL_LOG_COLUMNS.filter((c) => c !== 'organization_guid');
const SELECT_LIST = READ_COLUMNS.map((c) => `toString(${c})`).join(', ');

/**
 * How long before now() an INSERT that the process list shows as running for
 * `elapsed` seconds may have stamped its rows: `elapsed` is measured from the moment
 * the query was registered, its rows' ingested_at (the column default, now64(3)) is
 * taken after that. The margin covers rounding to milliseconds and the float.
 */
const INSERT_START_MARGIN_MS = 10;

/** What a backslash sequence of ClickHouse's TabSeparated output stands for; any other `\x` is x. */
const TSV_ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '0': '\0', a: '\x07', v: '\v' };
const TSV_ESCAPE = /\\(.)/gs;

/** A TabSeparated field as the string it stands for (most fields hold no backslash at all). */
const tsvField = (field: string): string => (field.indexOf('\\') < 0 ? field : field.replace(TSV_ESCAPE, (_m, ch: string) => TSV_ESCAPES[ch] ?? ch));

/**
 * A TabSeparated result (one line per row, fields in READ_COLUMNS order, every one a
 * toString() so never NULL) as CallLogRows of one shape.
 */
function toRows(organizationGuid: string, text: string): CallLogRow[] {
  const rows: CallLogRow[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const fields = text.slice(start, end).split('\t');
    const row = { organization_guid: organizationGuid } as CallLogRow;
    for (let i = 0; i < READ_COLUMNS.length; i++) row[READ_COLUMNS[i]!] = tsvField(fields[i] ?? '');
    rows.push(row);
    start = end + 1;
  }
  return rows;
}

export class CallLogSource {
  private orgParamType: Promise<string> | undefined;

  constructor(private readonly store: ClickhouseStore) {}

  /** The type to bind the workspace guid with, so the sort key's first column is compared natively. */
  private organizationType(): Promise<string> {
    this.orgParamType ??= this.store.client
      .query({
        query: "SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'call_logs' AND name = 'organization_guid'",
        format: 'JSONEachRow',
      })
      .then((r) => r.json<{ type: string }>())
      .then((rows) => (rows[0]?.type.includes('UUID') ? 'UUID' : 'String'))
      .catch((err: unknown) => {
        this.orgParamType = undefined;
        throw err;
      });
    return this.orgParamType;
  }

  /**
   * The delivery horizon: every call-log row with an ingested_at before it is
   * committed and visible, and no INSERT can still add one.
   *
   * ingested_at is the server's now64(3) when the INSERT runs (column default,
   * clickhouse/0004), so a row not visible yet belongs to an INSERT that is running
   * now (its rows are stamped at or after it started) or that starts later (stamped
   * after this query's now64). The horizon is therefore the start of the oldest
   * running INSERT into call_logs, or now when there is none, and never later than
   * now minus `settleMs` (kept for what the process list cannot see: a cluster's
   * asynchronous Distributed sends and replication). It must be asked in a query of
   * its own, before the batch is read: the read's view of the table must be taken
   * after it, so that an INSERT finishing in between is seen.
   *
   * chDB runs one query at a time, so there an INSERT is never running while this
   * or a read runs; the same rule holds trivially (test/forwarder.test.ts pins both).
   */
  async deliveryHorizon(settleMs: number): Promise<Date> {
    const result = await this.store.client.query({
      query: `SELECT toUnixTimestamp64Milli(now64(3)) AS now_ms, count() AS inserts, max(elapsed) AS longest
        FROM system.processes WHERE query_kind = 'Insert' AND positionCaseInsensitive(query, 'call_logs') > 0`,
      format: 'JSONEachRow',
      clickhouse_settings: { log_comment: 'forwarder.delivery_horizon' },
    });
    const [row] = await result.json<{ now_ms: string | number; inserts: string | number; longest: number }>();
    const nowMs = Number(row!.now_ms);
    const runningMs = Number(row!.inserts) > 0 ? Math.ceil(row!.longest * 1000) + INSERT_START_MARGIN_MS : 0;
    return new Date(nowMs - Math.max(settleMs, runningMs));
  }

  /**
   * The query of the next `limit` rows after the checkpoint and before the horizon,
   * in checkpoint order, selecting `select`.
   *
   * One query in two steps: the batch's last key and created_at range come from the
   * forwarder_order projection (keys only, in exactly this order, so it stops after
   * `limit` rows however long the backlog is); the rows themselves are then read
   * from the table by its own key (workspace, created_at range) and sorted, only
   * the batch's rows.
   */
  private async batchQuery(
    select: string,
    organizationGuid: string,
    after: Checkpoint,
    limit: number,
    before: Date,
  ): Promise<{ query: string; query_params: Record<string, unknown> }> {
    const orgType = await this.organizationType();
    return {
      query: `WITH (
          SELECT (max(batch_key), min(batch_created), max(batch_created)) FROM (
            SELECT (ingested_at, toString(guid)) AS batch_key, created_at AS batch_created FROM call_logs
            WHERE organization_guid = {org:${orgType}}
              AND ingested_at >= {at:DateTime64(3, 'UTC')}
              AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})
              AND ingested_at < {before:DateTime64(3, 'UTC')}
            ORDER BY organization_guid, ingested_at, toString(guid)
            LIMIT {limit:UInt32}
          )
        ) AS batch
        SELECT ${select} FROM call_logs
        WHERE organization_guid = {org:${orgType}}
          AND created_at >= batch.2 AND created_at <= batch.3
          AND ingested_at >= {at:DateTime64(3, 'UTC')} AND ingested_at <= batch.1.1
          AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})
          AND (ingested_at, toString(guid)) <= batch.1
        ORDER BY ingested_at, toString(guid)
        -- Never more rows than the batch; the LIMIT lets ClickHouse read the other columns for them only.
        LIMIT {limit:UInt32}`,
      query_params: { org: organizationGuid, at: clickhouseTime(after.at), guid: after.guid, before: clickhouseTime(before), limit },
    };
  }

  /**
   * The next batch as the body to send: ClickHouse writes every record (record-sql.ts)
   * and this only copies their bytes between the envelope's head and tail.
   */
  async nextEncodedBatch(organizationGuid: string, after: Checkpoint, limit: number, before: Date, kind: BodyKind): Promise<EncodedBatch> {
    const { query, query_params } = await this.batchQuery(
      `toUnixTimestamp64Milli(ingested_at), toString(guid), ${RECORD_SQL[kind]}`,
      organizationGuid,
      after,
      limit,
      before,
    );
    // exec: the answer's bytes as they come, with the format and settings in the statement itself
    // (chDB would make clickhouse_settings session-wide).
    const result = await this.store.client.exec({
      query: `${query}
        SETTINGS output_format_json_escape_forward_slashes = 0, log_comment = 'forwarder.next_encoded_batch'
        FORMAT TabSeparatedRaw`,
      query_params,
    });
    const chunks: Buffer[] = [];
    for await (const chunk of result.stream as AsyncIterable<Buffer>) chunks.push(chunk);
    return joinRecords(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), envelopeOf(kind, organizationGuid), after);
  }

  /** The next batch as rows, every column as text (tests and benches compare the records with them). */
  async nextBatch(organizationGuid: string, after: Checkpoint, limit: number, before: Date): Promise<CallLogRow[]> {
    return toRows(organizationGuid, await this.nextBatchText(organizationGuid, after, limit, before));
  }

  /**
   * The batch as the TabSeparated text ClickHouse answers (one line per row,
   * READ_COLUMNS in order, ingested_at and guid first): the rows' columns without a
   * record built. bench:forward's floor reads through it.
   */
  async nextBatchText(organizationGuid: string, after: Checkpoint, limit: number, before: Date): Promise<string> {
    const result = await this.store.client.query({
      ...(await this.batchQuery(SELECT_LIST, organizationGuid, after, limit, before)),
      format: 'TabSeparated',
      clickhouse_settings: { log_comment: 'forwarder.next_batch' },
    });
    return result.text();
  }

  /**
   * For each checkpoint, whether its workspace has a row after it and before the
   * horizon: one query for every caught-up cursor of a pass, instead of a lease, a
   * configuration read and an empty batch read for each. Meant for checkpoints that
   * were caught up a pass ago (their ranges in forwarder_order are short).
   */
  async haveRowsAfter(checkpoints: readonly (Checkpoint & { organizationGuid: string })[], before: Date): Promise<boolean[]> {
    if (checkpoints.length === 0) return [];
    const orgType = await this.organizationType();
    const params: Record<string, unknown> = { before: clickhouseTime(before) };
    const conditions = checkpoints.map((c, i) => {
      params[`org${i}`] = c.organizationGuid;
      params[`at${i}`] = clickhouseTime(c.at);
      params[`guid${i}`] = c.guid;
      return `(organization_guid = {org${i}:${orgType}} AND ingested_at >= {at${i}:DateTime64(3, 'UTC')} AND (ingested_at, toString(guid)) > ({at${i}:DateTime64(3, 'UTC')}, {guid${i}:String}))`;
    });
    const result = await this.store.client.query({
      query: `SELECT ${conditions.map((c) => `toUInt8(max(${c}))`).join(', ')} FROM call_logs
        WHERE ingested_at < {before:DateTime64(3, 'UTC')} AND (${conditions.join(' OR ')})`,
      query_params: params,
      format: 'JSONCompact',
      clickhouse_settings: { log_comment: 'forwarder.have_rows_after' },
    });
    const { data } = (await result.json()) as unknown as { data: (number | string)[][] };
    return checkpoints.map((_c, i) => Number(data[0]?.[i] ?? 0) === 1);
  }

  /**
   * When the oldest row after the checkpoint that is still inside the settle window
   * was ingested, or null when there is none: the forwarder wakes up exactly when it
   * settles instead of on the next poll. Reads one column of the workspace's newest
   * rows (the checkpoint is caught up when this is asked).
   */
  async oldestPending(organizationGuid: string, after: Checkpoint): Promise<Date | null> {
    const orgType = await this.organizationType();
    const result = await this.store.client.query({
      query: `SELECT toString(min(ingested_at)), count() FROM call_logs
        WHERE organization_guid = {org:${orgType}}
          AND ingested_at >= {at:DateTime64(3, 'UTC')}
          AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})`,
      query_params: { org: organizationGuid, at: clickhouseTime(after.at), guid: after.guid },
      format: 'JSONCompact',
      clickhouse_settings: { log_comment: 'forwarder.oldest_pending' },
    });
    const { data } = (await result.json()) as unknown as { data: [string, string | number][] };
    const [oldest, count] = data[0] ?? ['', 0];
    return Number(count) > 0 ? new Date(epochMs(oldest)) : null;
  }
}
