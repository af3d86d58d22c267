import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { ConfigChanges } from '../../src/core/config-changes.js';
import type { Services } from '../../src/core/services.js';
import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import { buildApp } from '../../src/http/app.js';
import { invoke, type TestApp } from './harness.js';
import { validated } from './servers.js';

/** Listens on 127.0.0.1 (a real port: the gateway streams, which inject cannot). Returns the base URL. */
export async function listenLoopback(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/** Registers an inbound server through the admin interface and waits for feature-learning. */
export async function registerServer(
  t: TestApp,
  ws: CreatedWorkspace,
  body: { name: string; url: string; authType: 'none' | 'headers'; headers?: Record<string, string>; accessControl?: 'private' | 'global' },
): Promise<{ serverGuid: string; identityGuid: string | null }> {
  const res = await invoke(t, 'rest', ws.token, 'create_inbound_server', body);
  if (res.status !== 201) throw new Error(`create_inbound_server: ${JSON.stringify(res.body)}`);
  const row = await validated(t, res.body.guid);
  if (row.authentication_status !== 'open' && row.authentication_status !== 'authenticated') throw new Error(`server not validated: ${row.status_reason}`);
  const identities = await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: res.body.guid });
  return { serverGuid: res.body.guid, identityGuid: identities.body.items[0]?.guid ?? null };
}

/** A gateway serving the given upstreams (each registered as a server without auth), and a token for it at `base`. */
export async function gatewayServing(
  t: TestApp,
  ws: CreatedWorkspace,
  base: string,
  name: string,
  upstreams: readonly (readonly [serverName: string, url: string])[],
): Promise<{ gatewayGuid: string; token: string; url: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name });
  for (const [serverName, url] of upstreams) {
    const { serverGuid } = await registerServer(t, ws, { name: serverName, url, authType: 'none' });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  }
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  return { gatewayGuid: gw.body.guid, token: issued.body.token, url: issued.body.url.replace(t.config.publicBaseUrl, base) };
}

/** A new gateway serving `serverGuid` with one identity shared by every caller, and a gateway token; `path` is its MCP endpoint's. */
export async function sharedIdentityGateway(
  t: TestApp,
  ws: CreatedWorkspace,
  name: string,
  serverGuid: string,
  identityGuid: string,
): Promise<{ gatewayGuid: string; token: string; path: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
    gatewayGuid: gw.body.guid,
    inboundServerGuid: serverGuid,
    identityScheme: 'sharedIdentity',
    sharedIdentityGuid: identityGuid,
  });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  return { gatewayGuid: gw.body.guid, token: issued.body.token, path: new URL(issued.body.url).pathname };
}

/** An SDK client connected to a gateway with a gateway token; `fetch` lets a test steer requests (e.g. across replicas). */
export async function gatewayClient(
  url: string,
  token: string,
  opts: { fetch?: typeof fetch; capabilities?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<Client> {
  const client = new Client({ name: 'gateway-test-host', version: '1.0.0' }, { capabilities: opts.capabilities ?? {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}`, ...(opts.headers ?? {}) } },
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  await client.connect(transport);
  return client;
}

/** An older host: a 1.x SDK client on the legacy HTTP+SSE transport at a gateway's `/sse` URL, with a gateway token. */
export async function legacySseClient(url: string, token: string, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'legacy-sse-host', version: '1.0.0' }, { capabilities });
  const auth = { authorization: `Bearer ${token}` };
  await client.connect(
    new SSEClientTransport(new URL(url), {
      requestInit: { headers: auth },
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }) },
    }),
  );
  return client;
}

/**
 * Another replica of the service: its own app (own caches, no memory shared with the
 * first) over the given services, listening on 127.0.0.1. The caller closes `app`.
 */
export async function startReplica(services: Services): Promise<{ app: FastifyInstance; base: string }> {
  const app = await buildApp({ services, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

/** The headers of a raw 2026-07-28 POST: the credential (if any), the revision, and the `Mcp-Method` (and `Mcp-Name`) it declares. */
export function modernHeaders(token: string | null, method: string, name?: unknown): Record<string, string> {
  return {
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
}

/** The envelope a raw 2026-07-28 request carries in `_meta`. */
export function modernEnvelope(clientName: string, capabilities: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: clientName, version: '1' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/** A raw 2026-07-28 `subscriptions/listen` POST (tools list changes), as far as the response's headers; `signal` drops it. */
export function rawListen(url: string, token: string, id: string, signal: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: modernHeaders(token, 'subscriptions/listen'),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: modernEnvelope('raw-listener') },
    }),
    signal,
  });
}

/**
 * Another replica with its own notice board, which hears of the first's configuration
 * changes only through a relay (in production, Postgres LISTEN/NOTIFY:
 * test/config-change-relay.test.ts).
 */
export async function startRelayedReplica(services: Services): Promise<{ app: FastifyInstance; base: string }> {
  const board = new ConfigChanges();
  services.configChanges.relayTo((org) => board.deliver(org));
  return startReplica({ ...services, configChanges: board });
}

/** A fetch that sends each request to the next of `bases` in turn (a load balancer without affinity); `seen` records where each went. */
export function alternatingFetch(bases: string[], seen: string[] = []): typeof fetch {
  let n = 0;
  return (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const target = bases[n++ % bases.length]!;
    seen.push(target);
    return fetch(target + url.pathname + url.search, init);
  };
}

/** The JSON-RPC answer of a POST to an MCP endpoint: the body, or, for an event stream, its first data line. */
export async function answerOf<T>(res: Response): Promise<T> {
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .find((l) => l.startsWith('data:'))!
        .slice(5)
    : text;
  return JSON.parse(json) as T;
}

/** A JSON-RPC answer as tests read it. */
export interface RawAnswer {
  result?: Record<string, any>;
  error?: { code: number; message: string; data?: any };
}

/**
 * One raw request of revision 2026-07-28 to a gateway (the envelope in `_meta`, the
 * `Mcp-Method` and `Mcp-Name` headers as the revision says): its HTTP status and JSON-RPC answer.
 * `meta`: more keys of `_meta` than the envelope's.
 */
export async function modernRequest(
  at: { url: string; token: string | null },
  method: string,
  params: Record<string, unknown> = {},
  capabilities: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
): Promise<{ status: number; body: RawAnswer }> {
  const name = method === 'tools/call' || method === 'prompts/get' ? params.name : method.startsWith('tasks/') ? params.taskId : params.uri;
  const res = await fetch(at.url, {
    method: 'POST',
    headers: modernHeaders(at.token, method, name),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: { ...modernEnvelope('raw-2026-host', capabilities), ...meta },
      },
    }),
  });
  // A 2026-07-28 server may answer with an event stream: the answer is its data line.
  return { status: res.status, body: await answerOf(res) };
}

/** A value checked against a protocol's own wire schema (a zod schema of its reference package), the issues and the value in the failure. */
export function expectWireShape(schema: { safeParse(value: unknown): { success: boolean; error?: unknown } }, value: unknown): void {
  const parsed = schema.safeParse(value);
  expect(parsed.success, `${String(parsed.error)}\n${JSON.stringify(value)}`).toBe(true);
}

/** A gateway exposing one server through its shared identity, and a gateway token for it. */
export async function gatewayForIdentity(
  t: TestApp,
  ws: CreatedWorkspace,
  server: { serverGuid: string; identityGuid: string | null },
  name: string,
): Promise<{ gatewayGuid: string; token: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', {
    gatewayGuid: gw.body.guid,
    inboundServerGuid: server.serverGuid,
    identityScheme: 'sharedIdentity',
    sharedIdentityGuid: server.identityGuid,
  });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  return { gatewayGuid: gw.body.guid, token: issued.body.token };
}

/** One stateless tools/call POSTed to the gateway at `base`; the answer's text, whatever it is. */
export async function postToolCall(base: string, gateway: { gatewayGuid: string; token: string }, tool: string): Promise<string> {
  const res = await fetch(`${base}/gateways/${gateway.gatewayGuid}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {} } }),
  });
  return res.text();
}
