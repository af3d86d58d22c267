import { SERVICE_LOG_REDACTION } from '../../src/core/redaction.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as Client2026, StreamableHTTPClientTransport as StreamableHTTPClientTransport2026 } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { loadConfig, type Config } from '../../src/config.js';
import { pathParams, queryParams, type AnyOperation } from '../../src/core/operation.js';
import { operationsByName } from '../../src/core/operations/index.js';
import { createWorkspace, type CreatedWorkspace } from '../../src/core/workspaces.js';
import { buildApp } from '../../src/http/app.js';
import { ADMIN_PREFIX } from '../../src/http/openapi.js';
import { openRuntime, type Runtime } from '../../src/runtime/open.js';
import { STORE_TEMPLATE_MANIFEST, type StoreTemplateManifest } from '../global-setup.js';

export type Surface = 'rest' | 'mcp' | 'mcp2026';
export const SURFACES: Surface[] = ['rest', 'mcp'];

/** The store this test process runs on: PGlite always, the Postgres server in the 'postgres' project. */
export const storeKind = (): 'pglite' | 'postgres' => (process.env.TEST_STORE === 'postgres' && process.env.DATABASE_URL ? 'postgres' : 'pglite');

/** A log sink that keeps every line, so tests can prove no secret was logged. */
export class CapturedLog {
  readonly lines: string[] = [];
  private push = (level: string) => (obj: unknown, msg?: string) => this.lines.push(`${level} ${JSON.stringify(obj, errorReplacer)} ${msg ?? ''}`);
  info = this.push('info');
  warn = this.push('warn');
  error = this.push('error');
  debug = this.push('debug');
  text(): string {
    return this.lines.join('\n');
  }
}
function errorReplacer(_k: string, v: unknown) {
  return v instanceof Error ? { message: v.message, stack: v.stack } : v;
}

export interface TestApp {
  app: FastifyInstance;
  runtime: Runtime;
  config: Config;
  log: CapturedLog;
  /** Every line fastify logged (requests, errors), for secret-leak checks. */
  httpLog: string[];
  close(): Promise<void>;
}

/** Starts the whole application on real stores in a fresh data directory. */
export async function startTestApp(env: Record<string, string> = {}, opts: { ownDatabase?: boolean } = {}): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-test-'));
  const own = opts.ownDatabase && storeKind() === 'postgres' ? await createOwnDatabase() : null;
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    EGRESS_ALLOWED_CIDRS: '127.0.0.0/8',
    PUBLIC_BASE_URL: 'http://127.0.0.1:9999',
    ...(storeKind() === 'postgres' ? { DATABASE_URL: own?.url ?? process.env.DATABASE_URL! } : {}),
    // npm run test:containers points the suite at a ClickHouse server too.
    ...(process.env.TEST_CLICKHOUSE_URL
      ? {
          CLICKHOUSE_URL: process.env.TEST_CLICKHOUSE_URL,
          CLICKHOUSE_USER: process.env.TEST_CLICKHOUSE_USER ?? 'default',
          CLICKHOUSE_PASSWORD: process.env.TEST_CLICKHOUSE_PASSWORD ?? '',
        }
      : {}),
    ...env,
  });
  copyStoreTemplates(config);
  const log = new CapturedLog();
  const runtime = await openRuntime(config, { logger: log });
  const httpLog: string[] = [];
  const stream = { write: (line: string) => void httpLog.push(line) };
  const app = await buildApp({ services: runtime.services, logger: { level: 'info', stream, redact: SERVICE_LOG_REDACTION } });
  await app.ready();
  return {
    app,
    runtime,
    config,
    log,
    httpLog,
    close: async () => {
      await app.close();
      await runtime.close();
      await own?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The run's migrated embedded stores (test/global-setup.ts) copied into a new data
 * directory, each where this test uses it and, for chDB, where its tables' retention
 * is the config's: openRuntime then finds every migration applied, as on a restart.
 * Without a template (a helper run by hand) the stores start empty.
 */
function copyStoreTemplates(config: Config): void {
  const dir = process.env.TEST_STORE_TEMPLATE;
  if (!dir) return;
  const made = JSON.parse(fs.readFileSync(path.join(dir, STORE_TEMPLATE_MANIFEST), 'utf8')) as StoreTemplateManifest;
  if (!config.databaseUrl) copyStoreTemplate(config.dataDir, 'pg');
  if (!config.clickhouse && config.logRetentionDays === made.logRetentionDays) copyStoreTemplate(config.dataDir, 'clickhouse');
}

/** One of the run's migrated embedded stores copied into `dataDir` (nothing without a template: the store starts empty). */
export function copyStoreTemplate(dataDir: string, store: 'pg' | 'clickhouse'): void {
  const dir = process.env.TEST_STORE_TEMPLATE;
  if (dir) fs.cpSync(path.join(dir, store), path.join(dataDir, store), { recursive: true });
}

/**
 * A database of its own on the test run's Postgres server, for a file whose checks
 * would see other files' work in the shared one: a digest of every stored row, or
 * forwarder cursors that the other files' running forwarders would lease.
 */
async function createOwnDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const shared = new URL(process.env.DATABASE_URL!);
  const name = `mcpgw_own_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: shared.toString() });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(shared);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** A fresh workspace with its admin (Administrator role, every capability) and their token. */
export async function newWorkspace(t: TestApp, opts: { partner?: boolean } = {}): Promise<CreatedWorkspace> {
  return createWorkspace(t.runtime.services.db, {
    name: `ws-${randomUUID().slice(0, 8)}`,
    adminEmail: `admin-${randomUUID().slice(0, 8)}@example.test`,
    partner: opts.partner,
  });
}

export interface Answer {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

/** A REST call through fastify's inject. */
export async function rest(
  t: TestApp,
  token: string | null,
  method: string,
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await t.app.inject({
    method: method as 'GET',
    url:
      url.startsWith('/') && !url.startsWith(ADMIN_PREFIX) && !url.startsWith('/healthz') && !url.startsWith('/metrics') && !url.startsWith('/gateways')
        ? ADMIN_PREFIX + url
        : url,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(payload !== undefined && typeof payload !== 'string' ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(payload !== undefined ? { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) } : {}),
  });
  let body: unknown = res.body;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.statusCode, body, headers: res.headers };
}

/** A fetch that answers from the app itself, so the SDK client needs no port. */
export function injectFetch(app: FastifyInstance): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    const res = await app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers,
      payload: init?.body as string | undefined,
    });
    const outHeaders = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) outHeaders.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    return new Response(res.statusCode === 204 || res.statusCode === 202 ? null : res.rawPayload, { status: res.statusCode, headers: outHeaders });
  }) as typeof fetch;
}

/** An MCP SDK client connected to the admin endpoint with this token. */
export async function mcpClient(t: TestApp, token: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.config.publicBaseUrl}${ADMIN_PREFIX}/mcp`), {
    fetch: injectFetch(t.app),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** A v2 SDK client pinned to revision 2026-07-28 (no fallback to the 2025 handshake), connected to the admin endpoint. */
export async function mcp2026Client(t: TestApp, token: string): Promise<Client2026> {
  const client = new Client2026({ name: 'test-2026', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const transport = new StreamableHTTPClientTransport2026(new URL(`${t.config.publicBaseUrl}${ADMIN_PREFIX}/mcp`), {
    fetch: injectFetch(t.app),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

const clients = new Map<string, Client | Client2026>();

/**
 * Runs one operation on one surface with the flattened input an MCP caller would
 * send; REST requests are derived from the registry (path, query, body). The answer
 * has the HTTP status (MCP: 200, or the problem's status) and the body.
 */
export async function invoke(t: TestApp, surface: Surface, token: string, name: string, input: Record<string, unknown> = {}): Promise<Answer> {
  const op = operationsByName.get(name);
  if (!op) throw new Error(`no operation ${name}`);
  const answer = surface === 'rest' ? await invokeRest(t, op, token, input) : await invokeMcp(t, op, token, input, surface === 'mcp2026' ? '2026' : '2025');
  // Every success is checked against the operation's declared output schema.
  if (answer.status < 300) {
    const parsed = op.output.safeParse(answer.body);
    if (!parsed.success) throw new Error(`${name} answered outside its output schema: ${parsed.error.message}`);
  }
  return answer;
}

async function invokeMcp(t: TestApp, op: AnyOperation, token: string, input: Record<string, unknown>, era: '2025' | '2026' = '2025'): Promise<Answer> {
  const name = op.name;
  const key = `${era}:${token}`;
  let client = clients.get(key);
  if (!client) {
    client = era === '2026' ? await mcp2026Client(t, token) : await mcpClient(t, token);
    clients.set(key, client);
  }
  const result = (await client.callTool({ name, arguments: input })) as CallToolResult;
  const body = result.structuredContent as any;
  expectTextMatchesStructured(result);
  return { status: result.isError ? body.status : 200, body, headers: {} };
}

function expectTextMatchesStructured(result: CallToolResult): void {
  const first = result.content[0];
  if (!first || first.type !== 'text' || JSON.stringify(JSON.parse(first.text)) !== JSON.stringify(result.structuredContent)) {
    throw new Error('tool result text does not carry the same JSON as structuredContent');
  }
}

export function restRequestFor(op: AnyOperation, input: Record<string, unknown>): { method: string; url: string; body?: Record<string, unknown> } {
  const rest = { ...input };
  let url = op.path;
  for (const p of pathParams(op)) {
    url = url.replace(`:${p}`, encodeURIComponent(String(rest[p] ?? '')));
    delete rest[p];
  }
  const qs = new URLSearchParams();
  for (const q of queryParams(op)) {
    if (rest[q] !== undefined) qs.set(q, String(rest[q]));
    delete rest[q];
  }
  const hasBody = op.method !== 'GET' && op.method !== 'DELETE';
  // GET and DELETE carry everything else (even unknown keys) in the query string.
  if (!hasBody) for (const [k, v] of Object.entries(rest)) if (v !== undefined) qs.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const query = qs.toString();
  return { method: op.method, url: ADMIN_PREFIX + url + (query ? `?${query}` : ''), ...(hasBody ? { body: rest } : {}) };
}

async function invokeRest(t: TestApp, op: AnyOperation, token: string, input: Record<string, unknown>): Promise<Answer> {
  const req = restRequestFor(op, input);
  return rest(t, token, req.method, req.url, req.body);
}

/** Closes cached MCP clients (call in afterAll). */
export async function closeClients(): Promise<void> {
  await Promise.all([...clients.values()].map((c) => c.close().catch(() => undefined)));
  clients.clear();
}

/** Every secret-looking string must be absent from everything the service said or logged. */
export function assertNeverLeaked(t: TestApp, secrets: string[], extra: unknown[] = []): void {
  const haystack = [t.log.text(), t.httpLog.join('\n'), ...extra.map((e) => JSON.stringify(e))].join('\n');
  for (const s of secrets) {
    if (s && haystack.includes(s)) throw new Error(`secret leaked: ${s.slice(0, 6)}…`);
  }
}
