import { settingsClause, type ClickhouseStore } from '../stores/clickhouse.js';
import { CALL_LOG_COLUMNS, type CallLogRow } from './call-log-row.js';
import { clickhouseTime, deliveryHorizon, haveRowsAfter, oldestPending, type Checkpoint, type ForwardedTable } from './checkpoint-queries.js';
import { joinRecords, type EncodedBatch } from './encoded-batch.js';
import { RECORD_SQL, envelopeOf, type BodyKind } from './record-sql.js';

// Benches and tests import these from here.
export { clickhouseTime, type Checkpoint };

// Every column but the workspace (the query fixes it), each through toString() so the
// physical types do not matter and no value is NULL. No aliases: in ClickHouse an
// alias named like a column would shadow it in WHERE.
const READ_COLUMNS = CALL_LOG_COLUMNS.filter((c) => c !== 'organization_guid');
const SELECT_LIST = READ_COLUMNS.map((c) => `toString(${c})`).join(', ');

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

/**
 * The rows of each INSERT (one ingested_at) of a workspace after the checkpoint's and
 * before the horizon: what the forwarder_counts projection (clickhouse/0019) holds, so
 * this reads a row per INSERT instead of a row per call.
 */
export const INSERT_COUNTS_SQL = `SELECT ingested_at, count() AS inserted FROM call_logs
  WHERE organization_guid = {org:String}
    AND ingested_at > {at:DateTime64(3, 'UTC')} AND ingested_at < {before:DateTime64(3, 'UTC')}
  GROUP BY ingested_at`;

/**
 * Reads the next batch of a workspace's call logs after a checkpoint, in
 * (ingested_at, toString(guid)) order, never past a delivery horizon: a time below
 * which no row can still appear (checkpoint-queries.ts), so the checkpoint never
 * moves past a row that is not visible yet.
 */
export class CallLogSource {
  /** call_logs for the checkpoint queries shared with the audit log. */
  private readonly table: ForwardedTable = { table: 'call_logs' };

  constructor(private readonly store: ClickhouseStore) {}

  /** The delivery horizon of call_logs alone (checkpoint-queries.ts); the forwarder asks one for every table it reads. */
  deliveryHorizon(settleMs: number): Promise<Date> {
    return deliveryHorizon(this.store, settleMs, ['call_logs']);
  }

  /**
   * The query of the next `limit` rows after the checkpoint and before the horizon,
   * in checkpoint order, selecting `select`.
   *
   * One query in two steps. How far the batch reaches comes from the counts per INSERT
   * (INSERT_COUNTS_SQL): the first ingested_at after the checkpoint's at which the
   * counts after it reach `limit`, or else the horizon. The rows are then read from the
   * table between the checkpoint and that time (the idx_ingested_at minmax index
   * skips the granules ingested before or after) and sorted: the rest of the
   * checkpoint's own INSERT, `limit` rows and the rest of the last INSERT at most,
   * however long the backlog is. No alias is named like a column (it would shadow it).
   */
  private batchQuery(
    select: string,
    organizationGuid: string,
    after: Checkpoint,
    limit: number,
    before: Date,
  ): { query: string; query_params: Record<string, unknown> } {
    return {
      query: `WITH (
          SELECT if(reached = 0, {before:DateTime64(3, 'UTC')}, inserts[reached].1)
          FROM (
            SELECT arraySort(groupArray((ingested_at, inserted))) AS inserts,
              arrayFirstIndex(n -> n >= {limit:UInt32}, arrayCumSum(arrayMap(i -> i.2, inserts))) AS reached
            FROM (${INSERT_COUNTS_SQL})
          )
        ) AS batch_end
        SELECT ${select} FROM call_logs
        WHERE organization_guid = {org:String}
          AND ingested_at >= {at:DateTime64(3, 'UTC')} AND ingested_at <= batch_end AND ingested_at < {before:DateTime64(3, 'UTC')}
          AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})
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
    const { query, query_params } = this.batchQuery(
      `toUnixTimestamp64Milli(ingested_at), toString(guid), ${RECORD_SQL[kind]}`,
      organizationGuid,
      after,
      limit,
      before,
    );
    // exec: the answer's bytes as they come, with the format in the statement itself.
    const result = await this.store.client.exec({
      query: `${query}${settingsClause({ output_format_json_escape_forward_slashes: 0, log_comment: 'forwarder.next_encoded_batch' })}
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
    const { query, query_params } = this.batchQuery(SELECT_LIST, organizationGuid, after, limit, before);
    const result = await this.store.client.query({
      query: query + settingsClause({ log_comment: 'forwarder.next_batch' }),
      query_params,
      format: 'TabSeparated',
    });
    return result.text();
  }

  /** For each checkpoint, whether its workspace has a row after it and before the horizon (checkpoint-queries.ts). */
  haveRowsAfter(checkpoints: readonly (Checkpoint & { organizationGuid: string })[], before: Date): Promise<boolean[]> {
    return haveRowsAfter(this.store, this.table, checkpoints, before);
  }

  /** When the oldest row after the checkpoint was ingested, or null (checkpoint-queries.ts). */
  oldestPending(organizationGuid: string, after: Checkpoint): Promise<Date | null> {
    return oldestPending(this.store, this.table, organizationGuid, after);
  }
}
