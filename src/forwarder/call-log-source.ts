import type { ClickhouseStore } from '../stores/clickhouse.js';
import { CALL_LOG_COLUMNS, epochMs, type CallLogRow } from './call-log-row.js';

/**
 * Reads the next batch of a workspace's call logs after a checkpoint, in
 * (ingested_at, guid) order. Rows younger than the settle window are left for the
 * next pass: an insert still in flight in another process may carry an earlier
 * ingested_at than rows already visible, and must not end up behind the checkpoint.
 */
export interface Checkpoint {
  at: Date;
  guid: string;
}

/** '2026-11-21 10:00:00.123', the form ClickHouse parses as DateTime64(3). */
export const clickhouseTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '');

// Every column but the workspace (the query fixes it). No aliases: in ClickHouse an
// alias named like a column would shadow it in WHERE.
const READ_COLUMNS = CALL_LOG_COLUMNS.filter((c) => c !== 'organization_guid');
const SELECT_LIST = READ_COLUMNS.map((c) => `toString(${c})`).join(', ');

/** One result row (JSONCompact: an array of strings in READ_COLUMNS order) as a CallLogRow of one shape. */
function toRow(organizationGuid: string, v: string[]): CallLogRow {
  const row = { organization_guid: organizationGuid } as CallLogRow;
  for (let i = 0; i < READ_COLUMNS.length; i++) row[READ_COLUMNS[i]!] = v[i] ?? '';
  return row;
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

  async nextBatch(organizationGuid: string, after: Checkpoint, limit: number, settleMs: number): Promise<CallLogRow[]> {
    const orgType = await this.organizationType();
    const result = await this.store.client.query({
      query: `SELECT ${SELECT_LIST} FROM call_logs
        WHERE organization_guid = {org:${orgType}}
          AND ingested_at >= {at:DateTime64(3, 'UTC')}
          AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})
          AND ingested_at < now64(3) - toIntervalMillisecond({settle:UInt32})
        ORDER BY ingested_at, toString(guid)
        LIMIT {limit:UInt32}`,
      query_params: { org: organizationGuid, at: clickhouseTime(after.at), guid: after.guid, settle: settleMs, limit },
      // One JSON document parsed in one native JSON.parse: measured cheaper than the
      // client's line-by-line parsing of JSONCompactEachRow (docs/forwarding.md).
      format: 'JSONCompact',
      clickhouse_settings: { log_comment: 'forwarder.next_batch' },
    });
    const { data } = (await result.json()) as unknown as { data: string[][] };
    return data.map((values) => toRow(organizationGuid, values));
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
