/**
 * bench:forward's floor: what forwarding costs on this machine before a single
 * record is built. It reads every batch's rows as the forwarder's query does
 * (CallLogSource.nextBatchText: the same projection step and row read, the columns
 * as text instead of finished records), the next read overlapping the send as in
 * the forwarder, and sends the same validating receiver one body written once
 * beforehand, waiting for each answer. No records built, no Postgres. The
 * forwarder's rate over the floor's, measured in the same run, shows what building
 * the records and the forwarder's bookkeeping take of the machine.
 */
import type { Services } from '../src/core/services.js';
import { CallLogSource, type Checkpoint } from '../src/forwarder/call-log-source.js';
import { epochMs } from '../src/forwarder/call-log-row.js';
import { sendToCollector } from '../src/forwarder/collector-client.js';

export interface FloorRequest {
  organizationGuid: string;
  /** The records to read (the workspace's whole backlog). */
  records: number;
  batchSize: number;
  url: string;
  headers: Record<string, string>;
  /** One batch's body, already encoded: sent once per batch read. */
  body: Buffer;
}

/** The checkpoint after a TabSeparated batch's last line (its first two fields are ingested_at and guid). */
function lastKey(text: string, from: Checkpoint): Checkpoint {
  const trimmed = text.trimEnd();
  if (!trimmed) return from;
  const [at, guid] = trimmed.slice(trimmed.lastIndexOf('\n') + 1).split('\t', 2);
  return { at: new Date(epochMs(at!)), guid: guid! };
}

/** Records per second of the floor over a workspace's backlog. */
export async function floorRate(services: Services, req: FloorRequest): Promise<number> {
  const source = new CallLogSource(services.clickhouse);
  const horizon = await source.deliveryHorizon(0);
  const read = async (after: Checkpoint) => {
    const text = await source.nextBatchText(req.organizationGuid, after, req.batchSize, horizon);
    return { text, end: lastKey(text, after) };
  };
  const started = performance.now();
  let sent = 0;
  let ahead = read({ at: new Date(0), guid: '' });
  while (sent < req.records) {
    const batch = await ahead;
    if (!batch.text) throw new Error(`the floor ran out of rows after ${sent} of ${req.records}`);
    if (sent + req.batchSize < req.records) ahead = read(batch.end);
    const outcome = await sendToCollector(services.egress, {
      url: req.url,
      headers: req.headers,
      body: req.body,
      contentType: 'application/json',
      timeoutMs: 30_000,
    });
    if (outcome.kind !== 'accepted') throw new Error(`the receiver did not accept the floor's batch: ${JSON.stringify(outcome)}`);
    sent += req.batchSize;
  }
  return sent / ((performance.now() - started) / 1000);
}
