import type { ClickhouseStore } from '../stores/clickhouse.js';
import { CALL_LOG_COLUMNS, type CallLogRow } from './call-log-row.js';

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

// No aliases: in ClickHouse an alias named like a column would shadow it in WHERE.
const SELECT_LIST = CALL_LOG_COLUMNS.map((c) => `toString(${c})`).join(', ');

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
      format: 'JSONCompactEachRow',
      clickhouse_settings: { log_comment: 'forwarder.next_batch' },
    });
    const tuples = await result.json<string[]>();
    return tuples.map((values) => {
      const row = {} as CallLogRow;
      CALL_LOG_COLUMNS.forEach((column, i) => (row[column] = values[i] ?? ''));
      return row;
    });
  }
}
