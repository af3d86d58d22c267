import { randomBytes, randomUUID } from 'node:crypto';
import type { CallLogInput } from '../../src/core/logs/call-log-row.js';
import type { Services } from '../../src/core/services.js';

/** A call-log row as the forwarder tests and bench make them: every field set, host and container absent. */
export type TestCallLog = CallLogInput & { guid: string; createdAt: Date; toolName: string; traceId: string; spanId: string; sessionId: string };

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
    errorMessage: null,
    durationMs: 42,
    requestBytes: 120,
    responseBytes: 2048,
    gatewayConnectionGuid: randomUUID(),
    userGuid: randomUUID(),
    outboundGatewayGuid: randomUUID(),
    inboundServerGuid: randomUUID(),
    hostGuid: null,
    serverContainerGuid: null,
    teamGuid: randomUUID(),
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    sessionId: `sess-${randomUUID().slice(0, 8)}`,
    ...over,
  };
}

/** Writes rows through the service's one ingest writer and waits until ClickHouse holds them. */
export async function writeCallLogs(services: Services, rows: TestCallLog[]): Promise<void> {
  await services.callLogs.write(rows);
  await services.callLogs.flush();
}
