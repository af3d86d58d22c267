import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { pathParams, type AnyOperation } from '../src/core/operation.js';
import { operations } from '../src/core/operations/index.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { ADMIN_PREFIX } from '../src/http/openapi.js';
import { insertIdentity, insertServer } from './helpers/fixtures.js';
import {
  assertProperty,
  baseInput,
  fuzzRuns,
  INVALID_UTF8_MARK,
  mutationsFor,
  oddTextFor,
  percentEncode,
  problemDefect,
  setPath,
  summarize,
  toJsonText,
  toText,
  withInvalidUtf8,
  type Mutation,
} from './helpers/fuzz.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * Fuzz of the admin interface, driven by the registry like common.test.ts: for every
 * operation, inputs made bad in one or two ways (wrong types, NUL and other control
 * characters, lone surrogates, over-long and 1 MiB strings, deep nesting, prototype
 * keys, ids of the wrong form, unknown fields, duplicate query parameters, bytes that
 * are not UTF-8), on REST and on MCP. Each must be a 4xx problem with a contract code
 * and leave every row of the store as it was. Seed and runs: test/helpers/fuzz.ts.
 */
const RUNS = 8;
const ODD_RUNS = 6;
let t: TestApp;
let ws: CreatedWorkspace;
/** Real resources of the workspace, so a bad input that slipped through would change something. */
const ids: Record<string, string> = {};
const tally = { rest: { sent: 0, '2xx': 0, '4xx': 0, '5xx': 0 }, mcp: { sent: 0, '2xx': 0, '4xx': 0, '5xx': 0 } };
const count = (surface: 'rest' | 'mcp', answer: Answer) => tally[surface][answer.success ? '2xx' : answer.status >= 500 ? '5xx' : '4xx']++;

/** One digest of every row the service stores (the token's last use aside: authentication records it). */
let digestQuery: string;
async function stateDigest(): Promise<string> {
  const { rows } = await sql<{ digest: string }>`${sql.raw(digestQuery)}`.execute(t.runtime.services.db);
  return rows[0]!.digest;
}

beforeAll(async () => {
  // A database of its own: the digest covers every stored row, which other files change in the shared one.
  t = await startTestApp({}, { ownDatabase: true });
  ws = await newWorkspace(t);
  const call = async (name: string, input: Record<string, unknown>) => {
    const res = await invoke(t, 'rest', ws.token, name, input);
    if (res.status >= 300) throw new Error(`${name}: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  ids.teamGuid = (await call('create_team', { name: 'Fuzz team' })).guid;
  ids.roleGuid = (await call('create_role', { name: 'Fuzz role' })).guid;
  ids.reassignToRoleGuid = ws.roleGuid;
  ids.userGuid = (await call('invite_user', { email: 'fuzz-member@example.test' })).guid;
  ids.gatewayGuid = (await call('create_gateway', { name: 'Fuzz gateway' })).guid;
  ids.hostGuid = (await call('create_host', { name: 'Fuzz host' })).guid;
  ids.inboundServerGuid = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
  const headerServer = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'headers' });
  ids.identityGuid = await insertIdentity(t, ws.organizationGuid, headerServer, ws.userGuid, { accessControl: 'global' });
  ids.sharedIdentityGuid = ids.identityGuid;
  ids.assignmentGuid = (await call('assign_server_to_gateway', { gatewayGuid: ids.gatewayGuid, inboundServerGuid: ids.inboundServerGuid })).guid;
  ids.connectionGuid = (await call('issue_gateway_token', { gatewayGuid: ids.gatewayGuid, hostGuid: ids.hostGuid })).connectionGuid;
  ids.id = (await call('create_access_token', { label: 'Fuzz token' })).id;
  await call('set_otel_configuration', { logsCollectorUrl: 'http://127.0.0.1:4318/v1/logs', headers: { 'X-Key': 'kept' } });

  const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name <> 'forwarder_cursors' order by 1`.execute(t.runtime.services.db);
  digestQuery = `select md5(coalesce(string_agg(r, E'\\n' order by r), '')) as digest from (${rows
    .map((r) => `select '${r.name} ' || (to_jsonb(x) - 'last_used_at')::text as r from "${r.name}" x`)
    .join(' union all ')}) rows`;
}, 120_000);

afterAll(async () => {
  console.error(`fuzz-admin: ${JSON.stringify(tally)}`);
  await t?.close();
});

interface Answer {
  status: number;
  /** The problem: the REST body, or the structuredContent of an isError tool result. */
  problem: unknown;
  /** Set when the answer is not the contract's shape at all. */
  malformed?: string;
  /** The operation ran: a 2xx, or a tool result that is not an error. */
  success?: boolean;
}

/** Optional fields an operation needs one of, so a bad value elsewhere is what gets refused. */
const NEEDED: Record<string, Record<string, unknown>> = { set_otel_configuration: { logsCollectorUrl: 'http://127.0.0.1:4318/v1/logs' } };

const REQUEST_LEVEL = new Set(['duplicateQuery', 'invalidUtf8Query', 'rawPath', 'bodyNotObject', 'wrongContentType', 'argumentsNotObject']);

/** Applies the value mutations; the request-level ones are read when the request is written. */
function mutatedInput(op: AnyOperation, mutations: Mutation[]): Record<string, unknown> {
  let input = { ...baseInput(op, ids), ...NEEDED[op.name] };
  for (const m of mutations) {
    if (m.kind === 'invalidUtf8') input = setPath(input, m.path, `a${INVALID_UTF8_MARK}b`);
    else if (!REQUEST_LEVEL.has(m.kind)) input = setPath(input, m.path, m.value);
  }
  return input;
}

async function sendRest(op: AnyOperation, mutations: Mutation[]): Promise<Answer> {
  const input = mutatedInput(op, mutations);
  const hasBody = op.method !== 'GET' && op.method !== 'DELETE';
  let url = op.path;
  for (const p of pathParams(op)) {
    const raw = mutations.find((m) => m.kind === 'rawPath' && m.path === p);
    url = url.replace(`:${p}`, raw ? String(raw.value) : percentEncode(toText(input[p])));
  }
  const query: string[] = [];
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    if (pathParams(op).includes(k)) continue;
    if (!hasBody || op.queryKeys?.includes(k)) query.push(`${percentEncode(k)}=${percentEncode(toText(v))}`);
    else Object.defineProperty(body, k, { value: v, enumerable: true });
  }
  for (const m of mutations) {
    if (m.kind === 'duplicateQuery')
      query.push(`${m.path}=${percentEncode(toText(input[m.path] ?? 'x'))}`, `${m.path}=${percentEncode(toText(input[m.path] ?? 'y'))}`);
    if (m.kind === 'invalidUtf8Query') query.push(`${m.path}=a%C3%28b`);
  }
  const notObject = mutations.find((m) => m.kind === 'bodyNotObject');
  const contentType = mutations.find((m) => m.kind === 'wrongContentType');
  const text = hasBody ? ((notObject?.value as string | undefined) ?? toJsonText(body)) : undefined;
  const res = await t.app.inject({
    method: op.method,
    url: `${ADMIN_PREFIX}${url}${query.length ? `?${query.join('&')}` : ''}`,
    headers: { authorization: `Bearer ${ws.token}`, ...(hasBody ? { 'content-type': (contentType?.value as string | undefined) ?? 'application/json' } : {}) },
    ...(text !== undefined ? { payload: text.includes(INVALID_UTF8_MARK) ? withInvalidUtf8(text) : text } : {}),
  });
  tally.rest.sent++;
  return restAnswer(res);
}

function restAnswer(res: { statusCode: number; headers: Record<string, unknown>; body: string }): Answer {
  if (res.statusCode < 300) return { status: res.statusCode, problem: null, success: true };
  if (!/^application\/problem\+json/.test(String(res.headers['content-type']))) {
    return { status: res.statusCode, problem: null, malformed: `content-type ${res.headers['content-type']}: ${res.body.slice(0, 200)}` };
  }
  return { status: res.statusCode, problem: JSON.parse(res.body) };
}

let rpcId = 0;
async function sendMcp(op: AnyOperation, mutations: Mutation[]): Promise<Answer> {
  const notObject = mutations.find((m) => m.kind === 'argumentsNotObject');
  const args = notObject ? JSON.stringify(notObject.value) : toJsonText(mutatedInput(op, mutations));
  const text = `{"jsonrpc":"2.0","id":${++rpcId},"method":"tools/call","params":{"name":${JSON.stringify(op.name)},"arguments":${args}}}`;
  const res = await t.app.inject({
    method: 'POST',
    url: `${ADMIN_PREFIX}/mcp`,
    headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: text.includes(INVALID_UTF8_MARK) ? withInvalidUtf8(text) : text,
  });
  tally.mcp.sent++;
  // Refused before any MCP message was read (a body that is not UTF-8, a prototype key): an HTTP problem.
  if (res.statusCode !== 200) return restAnswer(res);
  const json = String(res.headers['content-type']).startsWith('text/event-stream') ? /^data: (.*)$/m.exec(res.body)?.[1] : res.body;
  const message = json ? JSON.parse(json) : null;
  if (message?.error) {
    // tools/call with arguments that are not an object: invalid params, in words.
    const ok = notObject && message.error.code === -32602 && typeof message.error.message === 'string' && !/"code":/.test(message.error.message);
    return ok ? { status: 400, problem: null } : { status: 200, problem: null, malformed: `JSON-RPC error ${JSON.stringify(message.error).slice(0, 300)}` };
  }
  const result = message?.result;
  if (!result) return { status: 200, problem: null, malformed: `no result: ${res.body.slice(0, 300)}` };
  if (!result.isError) return { status: 200, problem: null, success: true };
  const problem = result.structuredContent;
  if (JSON.stringify(JSON.parse(result.content?.[0]?.text ?? 'null')) !== JSON.stringify(problem)) {
    return { status: problem?.status, problem, malformed: 'text content differs from structuredContent' };
  }
  return { status: problem?.status, problem };
}

/** A validation problem names the field that was made bad (or the body, when the request itself was refused). */
function namesField(problem: any, mutations: Mutation[]): boolean {
  if (mutations.length !== 1 || problem?.code !== 'validation_failed') return true;
  const field = mutations[0]!.path.split('.')[0]!;
  // The MCP endpoint's body parser names a key by its place in the JSON-RPC message.
  const fieldOf = (path: string) => path.replace(/^params\.arguments\./, '').split('.')[0];
  return problem.errors.some((e: { path: string }) => fieldOf(e.path) === field || e.path === 'body' || e.path === 'request');
}

const runsPerOperation = fuzzRuns(RUNS);
const timeout = Math.max(60_000, runsPerOperation * 1_500);

describe.each(['rest', 'mcp'] as const)('bad input on %s', (surface) => {
  it.each(operations.map((op) => [op.name, op] as const))(
    '%s: a 4xx problem with a contract code, and nothing stored changes',
    async (_name, op) => {
      const send = surface === 'rest' ? sendRest : sendMcp;
      await assertProperty(
        fc.asyncProperty(fc.array(mutationsFor(op, surface), { minLength: 1, maxLength: 2 }), async (mutations) => {
          // Compared run by run, so a run that changed something is the one reported (and shrunk).
          const before = await stateDigest();
          const answer = await send(op, mutations);
          count(surface, answer);
          const describe = `${op.name} ${mutations.map((m) => `${m.kind} ${m.path}=${summarize(m.value)}`).join('; ')}`;
          if (answer.success) throw new Error(`${describe}: not refused (status ${answer.status})`);
          if (answer.malformed) throw new Error(`${describe}: ${answer.malformed}`);
          if (answer.problem !== null) {
            const defect = problemDefect(answer.problem, answer.status);
            if (defect) throw new Error(`${describe}: ${defect}: ${summarize(answer.problem)}`);
            if (!namesField(answer.problem, mutations)) throw new Error(`${describe}: the problem does not name the field: ${summarize(answer.problem)}`);
          }
          if ((await stateDigest()) !== before) throw new Error(`${describe}: the stored state changed`);
        }),
        RUNS,
      );
    },
    timeout,
  );
});

/**
 * Text that is odd but may well be valid (quotes, backslashes, SQL and template
 * syntax, emoji, right-to-left marks, strings at their maximum length) in every
 * text field, filters included: it may be stored or refused, never a 5xx. Runs last:
 * what it stores is not compared.
 */
describe.each(['rest', 'mcp'] as const)('odd text on %s', (surface) => {
  const withText = operations.filter((op) => oddTextFor(op));
  it.each(withText.map((op) => [op.name, op] as const))(
    '%s: stored or refused with a contract problem, never a 5xx',
    async (_name, op) => {
      const send = surface === 'rest' ? sendRest : sendMcp;
      await assertProperty(
        fc.asyncProperty(oddTextFor(op)!, async (mutation) => {
          const answer = await send(op, [mutation]);
          count(surface, answer);
          const describe = `${op.name} ${mutation.path}=${summarize(mutation.value)}`;
          if (answer.malformed) throw new Error(`${describe}: ${answer.malformed}`);
          if (answer.success) return;
          const defect = problemDefect(answer.problem, answer.status);
          if (defect) throw new Error(`${describe}: ${defect}: ${summarize(answer.problem)}`);
        }),
        ODD_RUNS,
      );
    },
    timeout,
  );
});
