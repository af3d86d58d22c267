import { newGuid } from '../ids.js';
import type { CallLogInput, LogType } from './call-log-row.js';
import { randomHex } from './random-hex.js';
import { logNormal, trafficWeight, weightedPicker, type Random } from './seed-distributions.js';
import type { SeedPopulation } from './seed-population.js';

// What seed-logs' rows are made of (docs/call-logs.md, "Seeded data"): the window's hours, then each row's draws.

const ERRORS = [
  'upstream returned 502 Bad Gateway',
  'tool execution timed out after 30000 ms',
  'upstream returned 401 Unauthorized',
  'invalid arguments: missing required property "path"',
  'connection reset by upstream',
];
/** The JSON-RPC code a host is answered with for each error (the gateway's: upstream failures -32000, bad arguments -32602). */
const errorTypeOf = (message: string): string => (message.startsWith('invalid arguments') ? '-32602' : '-32000');
// An incident on one server: its calls fail for the upstream's reasons, not the caller's.
const BURST_ERRORS = ['upstream returned 502 Bad Gateway', 'connection reset by upstream', 'tool execution timed out after 30000 ms'];
const TIMEOUT_MS = 30_000;
const HOUR = 3_600_000;

const TYPES: LogType[] = ['tool_call', 'tool_list', 'resource_read', 'prompt_get', 'initialize', 'other'];
const TYPE_WEIGHTS = [0.8, 0.08, 0.05, 0.02, 0.04, 0.01];
const METHOD: Record<LogType, string> = {
  tool_call: 'tools/call',
  tool_list: 'tools/list',
  resource_read: 'resources/read',
  prompt_get: 'prompts/get',
  initialize: 'initialize',
  other: 'ping',
};
/** Median duration (ms) and response size (bytes) of the calls that are not tool calls. */
const TYPE_MEDIAN_MS: Record<LogType, number> = { tool_call: 0, tool_list: 15, resource_read: 60, prompt_get: 25, initialize: 80, other: 3 };
const TYPE_RESPONSE_BYTES: Record<LogType, number> = { tool_call: 0, tool_list: 6000, resource_read: 4000, prompt_get: 900, initialize: 700, other: 60 };

/** An hour of the seeded window: how many rows it gets and the incident in it, if any. */
export interface Hour {
  startMs: number;
  lengthMs: number;
  rows: number;
  burst: { serverGuid: string; errorRate: number } | null;
}

/**
 * The seeded window cut into UTC hours, each given a share of the rows by its traffic
 * weight (business hours, weekdays) with some hour-to-hour noise, and a few error
 * bursts: 1-3 hours in which one of the two busiest servers fails half to four
 * fifths of its calls. Bursts start in busy hours, when incidents get noticed.
 */
export function timeline(beginMs: number, endMs: number, rows: number, days: number, servers: string[], random: Random): Hour[] {
  const hours: Hour[] = [];
  for (let start = Math.floor(beginMs / HOUR) * HOUR; start < endMs; start += HOUR) {
    const from = Math.max(start, beginMs);
    hours.push({ startMs: from, lengthMs: Math.min(start + HOUR, endMs) - from, rows: 0, burst: null });
  }
  const weights = hours.map((h) => trafficWeight(h.startMs) * (h.lengthMs / HOUR) * (0.85 + 0.3 * random()));
  const total = weights.reduce((a, b) => a + b, 0);
  let cumulative = 0;
  let assigned = 0;
  for (let i = 0; i < hours.length; i++) {
    cumulative += weights[i]!;
    const upTo = Math.round((rows * cumulative) / total);
    hours[i]!.rows = upTo - assigned;
    assigned = upTo;
  }
  const pickBusyHour = weightedPicker(weights, random);
  for (let b = 0; b < Math.max(1, Math.round(days / 3)); b++) {
    const first = pickBusyHour();
    const burst = { serverGuid: servers[random() < 0.6 ? 0 : 1 % servers.length]!, errorRate: 0.5 + 0.3 * random() };
    const length = 1 + Math.floor(random() * 3);
    for (let i = first; i < Math.min(first + length, hours.length); i++) hours[i]!.burst = burst;
  }
  return hours;
}

/** Makes one row at a time from the population's distributions (docs/call-logs.md, "Seeded data"). */
export function rowMaker(population: SeedPopulation, organizationGuid: string, random: Random) {
  const pickUser = weightedPicker(population.userWeights, random);
  const pickTool = weightedPicker(population.toolWeights, random);
  const pickServer = weightedPicker(population.serverWeights, random);
  const pickType = weightedPicker(TYPE_WEIGHTS, random);
  const draw = logNormal(random);
  let traceId = randomHex(16);
  let index = 0;
  return (createdAt: number, hour: Hour): CallLogInput => {
    index++;
    const connections = population.users[pickUser()]!;
    // A user's main connection carries four fifths of their calls.
    const connection = connections.length === 1 || random() < 0.8 ? connections[0]! : connections[1 + Math.floor(random() * (connections.length - 1))]!;
    const type = TYPES[pickType()]!;
    let tool = null;
    let serverGuid: string | null = null;
    let containerGuid: string | null = null;
    if (type === 'tool_call') {
      tool = population.tools[pickTool()]!;
      serverGuid = tool.serverGuid;
      containerGuid = tool.containerGuid;
    } else if (type !== 'initialize') {
      const server = pickServer();
      serverGuid = population.servers[server]!;
      containerGuid = population.serverContainers[server]!;
    }
    const inBurst = hour.burst !== null && hour.burst.serverGuid === serverGuid;
    const failed = random() < (inBurst ? hour.burst!.errorRate : (tool?.errorRate ?? 0.005));
    const errorMessage = failed ? (inBurst ? BURST_ERRORS : ERRORS)[Math.floor(random() * (inBurst ? BURST_ERRORS.length : ERRORS.length))]! : null;
    const median = tool ? tool.medianMs : TYPE_MEDIAN_MS[type];
    // A timeout lasts the timeout; other failures come back faster than a success.
    const durationMs =
      errorMessage === ERRORS[1]
        ? TIMEOUT_MS + Math.floor(random() * 50)
        : Math.min(600_000, Math.max(1, Math.round(draw(failed ? median * 0.4 : median, tool?.sigma ?? 0.6))));
    // About three calls share a trace, as an agent's turn usually makes several.
    if (random() < 0.35) traceId = randomHex(16);
    // Hosts reconnect now and then: a new session.
    if (random() < 0.002) connection.sessionId = newGuid();
    const row: CallLogInput = {
      organizationGuid,
      createdAt,
      type,
      method: METHOD[type],
      toolName: tool?.name ?? null,
      status: failed ? 'error' : 'ok',
      errorMessage,
      errorType: errorMessage === null ? null : errorTypeOf(errorMessage),
      durationMs,
      requestBytes: 60 + Math.round(draw(350, 0.5)),
      responseBytes: failed ? 150 + Math.floor(random() * 200) : Math.round(draw(tool?.responseMedianBytes ?? TYPE_RESPONSE_BYTES[type], 0.9)),
      gatewayConnectionGuid: connection.guid,
      userGuid: connection.userGuid,
      outboundGatewayGuid: connection.gatewayGuid,
      inboundServerGuid: serverGuid,
      hostGuid: connection.hostGuid,
      serverContainerGuid: containerGuid,
      teamGuid: connection.teamGuid,
      traceId,
      sessionId: connection.sessionId,
    };
    if (random() < 0.05) {
      row.requestBody = JSON.stringify({ jsonrpc: '2.0', id: index, method: METHOD[type], params: { name: tool?.name, arguments: { query: `q${index}` } } });
      row.responseBody = JSON.stringify({
        jsonrpc: '2.0',
        id: index,
        result: { content: [{ type: 'text', text: 'x'.repeat(Math.floor(random() * 2000)) }] },
      });
      row.requestHeaders = { 'content-type': 'application/json', 'mcp-session-id': connection.sessionId, authorization: 'Bearer seed-not-a-secret' };
      row.responseHeaders = { 'content-type': 'application/json' };
    }
    return row;
  };
}

/** Every row of `hours` in time order, each at a random point of its own slot of its hour. */
export function* seedRows(hours: readonly Hour[], makeRow: (createdAt: number, hour: Hour) => CallLogInput, random: Random): Generator<CallLogInput> {
  for (const hour of hours) {
    for (let j = 0; j < hour.rows; j++) yield makeRow(hour.startMs + Math.floor(((j + random()) * hour.lengthMs) / hour.rows), hour);
  }
}
