/**
 * bench:forward-read — what the forwarder's batch read costs as the backlog grows:
 * the read through the forwarder_counts projection (CallLogSource.nextBatch) against
 * the former single query that sorted every row after the checkpoint, on the same
 * chDB data, alternating, as CPU milliseconds per batch (medians) and rows read. Also
 * prints how ClickHouse plans the counting step (EXPLAIN). `--per-insert` sets the rows
 * of each INSERT (one ingested_at each): the writer's segments at full speed are tens
 * of thousands, a quiet gateway's a handful. Figures only.
 *
 *   npx tsx bench/forward-read.ts [--backlog 1000000 --batch 5000 --reps 9 --per-insert 50000]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CALL_LOG_COLUMNS } from '../src/forwarder/call-log-row.js';
import { CallLogSource, INSERT_COUNTS_SQL, clickhouseTime } from '../src/forwarder/call-log-source.js';
import { migrateClickhouse, openClickhouse } from '../src/stores/clickhouse.js';
import { waitForMergesToSettle } from './clickhouse-idle.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: {
    backlog: { type: 'string', default: '1000000' },
    batch: { type: 'string', default: '5000' },
    reps: { type: 'string', default: '9' },
    'per-insert': { type: 'string', default: '50000' },
  },
});
const BACKLOG = Number(values.backlog);
const BATCH = Number(values.batch);
const REPS = Number(values.reps);
/** Rows per INSERT, as the ingest writer makes them (one ingested_at each, created_at over about a second). */
const PER_INSERT = Number(values['per-insert']);
const ORG = '11111111-1111-4111-8111-111111111111';
const OTHERS = ['22222222-2222-4222-8222-222222222222', '33333333-3333-4333-8333-333333333333'];

/** The read before clickhouse/0004: one query, every row after the checkpoint sorted for the LIMIT. */
const FORMER_READ = `SELECT ${CALL_LOG_COLUMNS.filter((c) => c !== 'organization_guid')
  .map((c) => `toString(${c})`)
  .join(', ')} FROM call_logs
  WHERE organization_guid = {org:String} AND ingested_at >= {at:DateTime64(3, 'UTC')}
    AND (ingested_at, toString(guid)) > ({at:DateTime64(3, 'UTC')}, {guid:String}) AND ingested_at < {before:DateTime64(3, 'UTC')}
  ORDER BY ingested_at, toString(guid) LIMIT {limit:UInt32}`;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-forward-read-'));
  const store = await openClickhouse({ dataDir });
  try {
    await migrateClickhouse(store, { retentionDays: 30 });
    const { client } = store;
    // The workspace's backlog plus as many rows of two others, in writer-sized INSERTs, created_at moving on.
    const total = BACKLOG * 3;
    for (let done = 0, insert = 0; done < total; done += PER_INSERT, insert++) {
      await client.command({
        query: `INSERT INTO call_logs (organization_guid, guid, created_at, type, method, tool_name, status, duration_ms, request_bytes, response_bytes,
            gateway_connection_guid, user_guid, outbound_gateway_guid, inbound_server_guid, team_guid, trace_id, span_id, session_id)
          SELECT [{org:String}, {o1:String}, {o2:String}][number % 3 + 1], generateUUIDv4(), now64(3) - toIntervalMillisecond({ageMs:UInt64} + number % 1000),
            'tool_call', 'tools/call', 'search_docs', 'ok', 42, 120, 2048, toString(generateUUIDv4()), toString(generateUUIDv4()), toString(generateUUIDv4()),
            toString(generateUUIDv4()), toString(generateUUIDv4()), lower(hex(randomString(16))), lower(hex(randomString(8))), concat('sess-', toString(number))
          FROM numbers({n:UInt64})`,
        query_params: { org: ORG, o1: OTHERS[0], o2: OTHERS[1], ageMs: Math.ceil((total - done) / PER_INSERT) * 2000, n: Math.min(PER_INSERT, total - done) },
        clickhouse_settings: { insert_deduplicate: 0 },
      });
    }
    await waitForMergesToSettle(client);
    const source = new CallLogSource(store);
    const start = { at: new Date(0), guid: '' };
    const horizon = await source.deliveryHorizon(0);
    const params = { org: ORG, at: clickhouseTime(start.at), guid: '', before: clickhouseTime(horizon), limit: BATCH };
    const columns = CALL_LOG_COLUMNS.filter((c) => c !== 'organization_guid');
    const former = async () => {
      const result = await client.query({ query: FORMER_READ, query_params: params, format: 'JSONCompact' });
      const body = (await result.json()) as unknown as { data: string[][]; statistics: { rows_read: number } };
      // Rows as nextBatch returns them, so both sides pay for the same objects.
      body.data.map((v) => Object.fromEntries(columns.map((c, i) => [c, v[i] ?? ''])));
      return body;
    };
    const cpu: Record<'former' | 'counted', number[]> = { former: [], counted: [] };
    let formerRows = 0;
    for (let i = 0; i < REPS; i++) {
      let before = process.cpuUsage();
      formerRows = (await former()).statistics.rows_read;
      let used = process.cpuUsage(before);
      cpu.former.push((used.user + used.system) / 1000);
      before = process.cpuUsage();
      await source.nextBatch(ORG, start, BATCH, horizon);
      used = process.cpuUsage(before);
      cpu.counted.push((used.user + used.system) / 1000);
    }
    // The counting step of nextBatch on its own: what it reads and how it is planned.
    const countRead = (
      (await (await client.query({ query: INSERT_COUNTS_SQL, query_params: params, format: 'JSONCompact' })).json()) as unknown as {
        statistics: { rows_read: number };
      }
    ).statistics.rows_read;
    const plan = await client.query({ query: `EXPLAIN indexes = 1 ${INSERT_COUNTS_SQL}`, query_params: params, format: 'TabSeparatedRaw' });
    const planLines = (await plan.text())
      .split('\n')
      .filter((l) => /ReadFromMergeTree|Read type|Granules: \d+\/\d+$/.test(l))
      .map((l) => l.trim());
    console.log(
      `\nbench:forward-read  backlog ${BACKLOG} rows of one workspace (+${BACKLOG * 2} of two others), ${PER_INSERT} rows an INSERT, batch ${BATCH}, load average ${os.loadavg()[0]!.toFixed(1)}`,
    );
    console.table([
      { read: 'former single query (sorts the backlog)', 'cpu ms / batch (median)': +median(cpu.former).toFixed(1), 'rows read': formerRows },
      {
        read: 'forwarder_counts projection, then the batch',
        'cpu ms / batch (median)': +median(cpu.counted).toFixed(1),
        'rows read': `${countRead} (counting step)`,
      },
    ]);
    console.log(`Plan of the counting step: ${planLines.join(' | ')}`);
  } finally {
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
