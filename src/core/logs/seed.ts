import { newGuid } from '../ids.js';
import type { Services } from '../services.js';
import type { CallLogInput, LogType } from './call-log-row.js';
import { randomHex } from './random-hex.js';

export interface SeedOptions {
  organizationGuid: string;
  rows: number;
  days: number;
  /** Called after each chunk is accepted, with the rows written so far. */
  onProgress?: (done: number, total: number) => void;
}

const TOOLS = [
  'search_issues',
  'get_file_contents',
  'create_pull_request',
  'list_commits',
  'query_database',
  'send_message',
  'fetch_url',
  'echo',
  'get_weather',
  'summarize',
];
const ERRORS = [
  'upstream returned 502 Bad Gateway',
  'tool execution timed out after 30000 ms',
  'upstream returned 401 Unauthorized',
  'invalid arguments: missing required property "path"',
  'connection reset by upstream',
];
const CHUNK = 5000;

/** A small deterministic-enough PRNG: seeding 10M rows spends its time in the writer, not in crypto. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

async function resourceGuids(services: Services, organizationGuid: string) {
  const db = services.db;
  const pick = async (table: 'gateways' | 'inbound_servers' | 'users' | 'hosts' | 'teams') =>
    (await db.selectFrom(table).select('guid').where('organization_guid', '=', organizationGuid).limit(200).execute()).map((r) => r.guid);
  const connections = await db
    .selectFrom('connections')
    .select(['guid', 'gateway_guid', 'host_guid', 'creator_guid'])
    .where('organization_guid', '=', organizationGuid)
    .limit(500)
    .execute();
  const orFake = (list: string[], n: number) => (list.length ? list : Array.from({ length: n }, () => newGuid()));
  const gateways = orFake(await pick('gateways'), 4);
  const users = orFake(await pick('users'), 12);
  const hosts = orFake(await pick('hosts'), 5);
  const links = connections.length
    ? connections.map((c) => ({ connection: c.guid, gateway: c.gateway_guid, host: c.host_guid ?? hosts[0]!, user: c.creator_guid }))
    : Array.from({ length: 30 }, (_, i) => ({
        connection: newGuid(),
        gateway: gateways[i % gateways.length]!,
        host: hosts[i % hosts.length]!,
        user: users[i % users.length]!,
      }));
  return {
    servers: orFake(await pick('inbound_servers'), 8),
    teams: orFake(await pick('teams'), 3),
    links,
    containers: Array.from({ length: 6 }, () => newGuid()),
  };
}

function pickType(r: number): LogType {
  if (r < 0.8) return 'tool_call';
  if (r < 0.88) return 'tool_list';
  if (r < 0.93) return 'resource_read';
  if (r < 0.95) return 'prompt_get';
  if (r < 0.99) return 'initialize';
  return 'other';
}

const METHOD: Record<LogType, string> = {
  tool_call: 'tools/call',
  tool_list: 'tools/list',
  resource_read: 'resources/read',
  prompt_get: 'prompts/get',
  initialize: 'initialize',
  other: 'ping',
};

/**
 * Writes `rows` synthetic but realistic call-log rows, spread evenly over the last
 * `days` days in time order, through the normal ingest path (services.callLogs),
 * using the workspace's real gateways, servers, users and connections where they
 * exist; raises a few alerts. Returns the rows written and the seconds it took.
 */
export async function seedCallLogs(services: Services, opts: SeedOptions): Promise<{ rows: number; seconds: number }> {
  const started = performance.now();
  const res = await resourceGuids(services, opts.organizationGuid);
  const random = rng(Date.now());
  const end = Date.now();
  const span = opts.days * 86_400_000;
  const begin = end - span;
  let traceId = randomHex(16);
  const sessions = res.links.map(() => newGuid());
  for (let done = 0; done < opts.rows;) {
    const n = Math.min(CHUNK, opts.rows - done);
    const chunk: CallLogInput[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const index = done + i;
      const link = res.links[Math.floor(random() * res.links.length)]!;
      const type = pickType(random());
      const failed = random() < 0.03;
      // About three calls share a trace, as an agent's turn usually makes several.
      if (random() < 0.35) traceId = randomHex(16);
      const withDetail = random() < 0.05;
      const tool = type === 'tool_call' ? TOOLS[Math.floor(random() * TOOLS.length)]! : null;
      chunk[i] = {
        organizationGuid: opts.organizationGuid,
        createdAt: Math.floor(begin + (span * index) / opts.rows),
        type,
        method: METHOD[type],
        toolName: tool,
        status: failed ? 'error' : 'ok',
        errorMessage: failed ? ERRORS[Math.floor(random() * ERRORS.length)]! : null,
        durationMs: Math.floor(5 + random() * random() * 2000),
        requestBytes: Math.floor(80 + random() * 900),
        responseBytes: Math.floor(100 + random() * random() * 20_000),
        gatewayConnectionGuid: link.connection,
        userGuid: link.user,
        outboundGatewayGuid: link.gateway,
        inboundServerGuid: type === 'initialize' ? null : res.servers[Math.floor(random() * res.servers.length)]!,
        hostGuid: link.host,
        serverContainerGuid: random() < 0.3 ? res.containers[Math.floor(random() * res.containers.length)]! : null,
        teamGuid: res.teams[Math.floor(random() * res.teams.length)]!,
        traceId,
        sessionId: sessions[res.links.indexOf(link)] ?? null,
        ...(withDetail
          ? {
              requestBody: JSON.stringify({ jsonrpc: '2.0', id: index, method: METHOD[type], params: { name: tool, arguments: { query: `q${index}` } } }),
              responseBody: JSON.stringify({
                jsonrpc: '2.0',
                id: index,
                result: { content: [{ type: 'text', text: 'x'.repeat(Math.floor(random() * 2000)) }] },
              }),
              requestHeaders: { 'content-type': 'application/json', 'mcp-session-id': 's', authorization: 'Bearer seed-not-a-secret' },
              responseHeaders: { 'content-type': 'application/json' },
            }
          : {}),
      };
    }
    await services.callLogs.write(chunk);
    done += n;
    opts.onProgress?.(done, opts.rows);
  }
  await services.callLogs.flush();
  const server = res.servers[0]!;
  await services.alerts.raise({
    organizationGuid: opts.organizationGuid,
    code: 'upstream_call_failed',
    messageType: 'error',
    subject: 'Calls to an upstream server are failing',
    message: 'Several tool calls returned 502 Bad Gateway in the last hour.',
    dynamicContent: { subject: 'Calls to {server} are failing', message: 'Several tool calls returned {status}.', values: { server, status: '502' } },
    debugContext: { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>502 Bad Gateway</h1>' },
    relatedResourceIds: [server],
  });
  await services.alerts.raise({
    organizationGuid: opts.organizationGuid,
    code: 'server_validation_failed',
    messageType: 'warning',
    subject: 'A server could not be validated',
    message: 'The server did not answer initialize.',
    relatedResourceIds: [res.servers[1 % res.servers.length]!],
  });
  return { rows: opts.rows, seconds: Math.round((performance.now() - started) / 10) / 100 };
}
