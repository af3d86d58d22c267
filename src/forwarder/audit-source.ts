import { settingsClause, type ClickhouseStore } from '../stores/clickhouse.js';
import { AUDIT_RECORD_SQL, type AuditBodyKind } from './audit-record-sql.js';
import { clickhouseTime, haveRowsAfter, oldestPending, type Checkpoint, type ForwardedTable } from './checkpoint-queries.js';
import { joinRecords, type EncodedBatch } from './encoded-batch.js';
import { envelopeOf, type BodyKind } from './record-sql.js';

const AUDIT_TABLE: ForwardedTable = { table: 'audit_log' };

/**
 * Reads the next batch of a workspace's admin audit records after a checkpoint, as
 * the body to send, in the call logs' order and under the same horizon rule:
 * (ingested_at, toString(guid)) after the checkpoint and before the horizon.
 *
 * One plain query: the table is sorted by (workspace, created_at, guid), so the
 * workspace's range is read and the rows after the checkpoint sorted (the minmax
 * index on ingested_at skips older granules). Admin operations are few next to
 * calls, so an outage's backlog stays small; call_logs needs its forwarder_counts
 * projection for what this sort costs at call volume.
 */
export class AuditSource {
  constructor(private readonly store: ClickhouseStore) {}

  /** The next batch as the body to send: ClickHouse writes every record (audit-record-sql.ts). */
  async nextEncodedBatch(organizationGuid: string, after: Checkpoint, limit: number, before: Date, kind: BodyKind): Promise<EncodedBatch> {
    if (kind === 'otlp_traces') throw new Error('audit records are sent as logs, never as spans');
    const record = AUDIT_RECORD_SQL[kind satisfies AuditBodyKind];
    // exec: the answer's bytes as they come, with the format in the statement itself.
    const result = await this.store.client.exec({
      query: `SELECT toUnixTimestamp64Milli(ingested_at), toString(guid), ${record} FROM audit_log
        WHERE organization_guid = {org:String}
          AND ingested_at >= {at:DateTime64(3, 'UTC')}
          AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String})
          AND ingested_at < {before:DateTime64(3, 'UTC')}
        ORDER BY ingested_at, toString(guid)
        LIMIT {limit:UInt32}${settingsClause({ output_format_json_escape_forward_slashes: 0, log_comment: 'forwarder.next_audit_batch' })}
        FORMAT TabSeparatedRaw`,
      query_params: { org: organizationGuid, at: clickhouseTime(after.at), guid: after.guid, before: clickhouseTime(before), limit },
    });
    const chunks: Buffer[] = [];
    for await (const chunk of result.stream as AsyncIterable<Buffer>) chunks.push(chunk);
    return joinRecords(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), envelopeOf(kind, organizationGuid), after);
  }

  haveRowsAfter(checkpoints: readonly (Checkpoint & { organizationGuid: string })[], before: Date): Promise<boolean[]> {
    return haveRowsAfter(this.store, AUDIT_TABLE, checkpoints, before);
  }

  oldestPending(organizationGuid: string, after: Checkpoint): Promise<Date | null> {
    return oldestPending(this.store, AUDIT_TABLE, organizationGuid, after);
  }
}
