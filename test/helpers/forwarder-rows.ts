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

/**
 * A maker of rows shaped like one workspace's traffic: its few gateways, servers,
 * users, teams and host connections (the sizes seedCallLogs assumes when a workspace
 * has none: 4, 8, 12, 3 and 30), a session per connection, fresh trace and span ids
 * per call. callLog alone puts a new random guid in every column, the worst case for
 * the LowCardinality columns they are stored in.
 */
export function workspaceCallLogs(organizationGuid: string): () => TestCallLog {
  const pool = (n: number) => Array.from({ length: n }, () => randomUUID());
  const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)]!;
  const gateways = pool(4);
  const servers = pool(8);
  const users = pool(12);
  const teams = pool(3);
  const connections = pool(30).map((guid, i) => ({
    guid,
    gateway: gateways[i % gateways.length]!,
    user: users[i % users.length]!,
    session: `sess-${guid.slice(0, 8)}`,
  }));
  return () => {
    const connection = pick(connections);
    return callLog(organizationGuid, {
      gatewayConnectionGuid: connection.guid,
      outboundGatewayGuid: connection.gateway,
      userGuid: connection.user,
      sessionId: connection.session,
      inboundServerGuid: pick(servers),
      teamGuid: pick(teams),
    });
  };
}

/** Writes rows through the service's one ingest writer and waits until ClickHouse holds them. */
export async function writeCallLogs(services: Services, rows: TestCallLog[]): Promise<void> {
  await services.callLogs.write(rows);
  await services.callLogs.flush();
}
