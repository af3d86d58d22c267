import { randomBytes } from 'node:crypto';
import type { CallLogInput } from '../../src/core/logs/call-log-row.js';
import { newGuid } from '../../src/core/ids.js';
import type { TestApp } from './harness.js';

/** A valid call-log input row for `organizationGuid`, every guid column set; `overrides` win. */
export function logRow(organizationGuid: string, overrides: Partial<CallLogInput> = {}): CallLogInput {
  return {
    organizationGuid,
    guid: newGuid(),
    createdAt: Date.now(),
    type: 'tool_call',
    method: 'tools/call',
    toolName: 'echo',
    status: 'ok',
    durationMs: 12,
    requestBytes: 100,
    responseBytes: 200,
    gatewayConnectionGuid: newGuid(),
    userGuid: newGuid(),
    outboundGatewayGuid: newGuid(),
    inboundServerGuid: newGuid(),
    hostGuid: newGuid(),
    serverContainerGuid: newGuid(),
    teamGuid: newGuid(),
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    sessionId: 'session-1',
    ...overrides,
  };
}

/** Writes rows through the app's one writer and waits until ClickHouse holds them. */
export async function ingest(t: TestApp, rows: CallLogInput[]): Promise<void> {
  await t.runtime.services.callLogs.write(rows);
  await t.runtime.services.callLogs.flush();
}

/** Counts a workspace's rows straight from ClickHouse (bypassing the API). */
export async function countRows(t: Pick<TestApp, 'runtime'>, organizationGuid: string, table = 'call_logs'): Promise<number> {
  const res = await t.runtime.services.clickhouse.client.query({
    query: `SELECT count() AS n FROM ${table} WHERE organization_guid = {org:String}`,
    query_params: { org: organizationGuid },
    format: 'JSONEachRow',
  });
  const [row] = await res.json<{ n: number | string }>();
  return Number(row?.n ?? 0);
}
