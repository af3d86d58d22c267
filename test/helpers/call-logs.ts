import { randomBytes, randomUUID } from 'node:crypto';
import type { Services } from '../../src/core/services.js';

/**
 * Writes call-log rows for forwarder tests through the service's ingest writer
 * (services.callLogs) when the call-log store is present; before that lands, into a
 * `call_logs` table of the agreed contract created here.
 */
export interface TestCallLog {
  organizationGuid: string;
  guid: string;
  createdAt: Date;
  type: string;
  method: string;
  toolName: string;
  status: 'ok' | 'error';
  errorMessage: string;
  durationMs: number;
  requestBytes: number;
  responseBytes: number;
  gatewayConnectionGuid: string;
  userGuid: string;
  outboundGatewayGuid: string;
  inboundServerGuid: string;
  hostGuid: string;
  serverContainerGuid: string;
  teamGuid: string;
  traceId: string;
  spanId: string;
  sessionId: string;
}

const FIXTURE_DDL = `CREATE TABLE IF NOT EXISTS call_logs (
  organization_guid UUID, guid UUID, created_at DateTime64(3, 'UTC'), ingested_at DateTime64(3, 'UTC') DEFAULT now64(3),
  type LowCardinality(String), method LowCardinality(String), tool_name String, status LowCardinality(String), error_message String,
  duration_ms UInt32, request_bytes UInt32, response_bytes UInt32,
  gateway_connection_guid UUID, user_guid UUID, outbound_gateway_guid UUID, inbound_server_guid UUID, host_guid UUID,
  server_container_guid UUID, team_guid UUID, trace_id String, span_id String, session_id String
) ENGINE = MergeTree ORDER BY (organization_guid, ingested_at, guid)`;

const ZERO = '00000000-0000-0000-0000-000000000000';

/** A realistic row; every call a tools/call unless overridden. */
export function callLog(organizationGuid: string, over: Partial<TestCallLog> = {}): TestCallLog {
  return {
    organizationGuid,
    guid: randomUUID(),
    createdAt: new Date(),
    type: 'tool_call',
    method: 'tools/call',
    toolName: 'search_docs',
    status: 'ok',
    errorMessage: '',
    durationMs: 42,
    requestBytes: 120,
    responseBytes: 2048,
    gatewayConnectionGuid: randomUUID(),
    userGuid: randomUUID(),
    outboundGatewayGuid: randomUUID(),
    inboundServerGuid: randomUUID(),
    hostGuid: ZERO,
    serverContainerGuid: '',
    teamGuid: randomUUID(),
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    sessionId: `sess-${randomUUID().slice(0, 8)}`,
    ...over,
  };
}

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const chTime = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

let fixtureReady: Promise<void> | undefined;

export async function writeCallLogs(services: Services, rows: TestCallLog[]): Promise<void> {
  const writer = (services as unknown as { callLogs?: { write(rows: unknown[]): Promise<void> | void; flush(): Promise<void> } }).callLogs;
  if (writer) {
    await writer.write(rows);
    await writer.flush();
    return;
  }
  fixtureReady ??= services.clickhouse.client.command({ query: FIXTURE_DDL }).then(() => undefined);
  await fixtureReady;
  const values = rows.map((r) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) out[snake(k)] = v instanceof Date ? chTime(v) : v === '' && k.endsWith('Guid') ? ZERO : v;
    return out;
  });
  await services.clickhouse.client.insert({ table: 'call_logs', values, format: 'JSONEachRow' });
}
