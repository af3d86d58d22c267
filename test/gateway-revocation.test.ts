import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { listenLoopback, rawListen, registerServer, startRelayedReplica } from './helpers/gateway.js';
import { startToolServer, type Upstream } from './helpers/upstreams.js';

/**
 * A host's long-lived streams end once its token no longer admits it: a 2025 session's
 * GET stream, the legacy transport's stream and a 2026-07-28 listen, in the replica the
 * change was made in and in another (contract: a revoked token is refused; nothing of
 * the upstreams may keep reaching it on a stream opened before).
 */
let t: TestApp;
let base: string;
let replicaApp: FastifyInstance;
let replicaBase: string;
let tools: Upstream;
let ws: CreatedWorkspace;
let serverGuid: string;
const clients: Client[] = [];
/** Cuts the raw streams still open when the file ends (the streams of tokens never revoked). */
const streams = new AbortController();

beforeAll(async () => {
  [t, tools] = await Promise.all([startTestApp(), startToolServer('alpha')]);
  base = await listenLoopback(t);
  const replica = await startRelayedReplica(t.runtime.services);
  replicaApp = replica.app;
  replicaBase = replica.base;
  ws = await newWorkspace(t);
  serverGuid = (await registerServer(t, ws, { name: 'alpha', url: tools.url, authType: 'none' })).serverGuid;
}, 120_000);

afterAll(async () => {
  streams.abort();
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await closeClients();
  await replicaApp?.close();
  await t?.close();
  await tools?.close();
});

/** A gateway with the server, and a token (with its id) for it. */
async function issued(): Promise<{ gatewayGuid: string; token: string; tokenId: string; connectionGuid: string; path: string }> {
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `Revoked ${Math.random().toString(36).slice(2, 7)}` });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  const token = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  expect(token.status, JSON.stringify(token.body)).toBe(201);
  return {
    gatewayGuid: gw.body.guid,
    token: token.body.token,
    tokenId: token.body.tokenId,
    connectionGuid: token.body.connectionGuid,
    path: new URL(token.body.url).pathname,
  };
}

/** An open stream: `ended` settles when the service ends or cuts it (an async function cannot return a bare promise unawaited). */
interface Stream {
  ended: Promise<unknown>;
}

/** Reads a response body to its end: resolves when the service ends or cuts the stream. */
async function ended(res: Response): Promise<void> {
  const reader = res.body!.getReader();
  try {
    while (!(await reader.read()).done);
  } catch {
    // Cut off: ended too.
  }
}

/** Resolves to 'open' if the stream is still open after `ms`, else 'ended'. */
const stateAfter = (stream: Promise<unknown>, ms: number) =>
  Promise.race([stream.then(() => 'ended' as const), new Promise<'open'>((r) => setTimeout(() => r('open'), ms))]);

/** A 2025-11-25 session's GET stream, through `at`. */
async function sessionStream(at: string, path: string, token: string): Promise<Stream> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(at + path, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'revoked-host', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(at + path, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const stream = await fetch(at + path, { headers: { ...session, accept: 'text/event-stream' }, signal: streams.signal });
  expect(stream.status).toBe(200);
  return { ended: ended(stream) };
}

/** The legacy transport's stream, through `at`. */
async function legacyStream(at: string, path: string, token: string): Promise<Stream> {
  const stream = await fetch(at + path.replace(/\/mcp$/, '/sse'), {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: streams.signal,
  });
  expect(stream.status).toBe(200);
  return { ended: ended(stream) };
}

/** A 2026-07-28 host's listen stream (the v2 SDK's client), through `at`: resolves when the stream closes. */
async function listenStream(at: string, path: string, token: string): Promise<Stream> {
  const client = new Client({ name: 'revoked-listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(at + path), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  const subscription = await client.listen({ toolsListChanged: true });
  return { ended: subscription.closed };
}

const STREAMS = { 'a 2025 session’s GET stream': sessionStream, 'the legacy transport’s stream': legacyStream, 'a 2026-07-28 listen': listenStream };

describe.each(Object.entries(STREAMS))('%s', (_name, open) => {
  it('ends when its token is revoked, in this replica and in another; another token’s stream goes on', async () => {
    const revoked = await issued();
    const kept = await issued();
    const here = await open(base, revoked.path, revoked.token);
    const there = await open(replicaBase, revoked.path, revoked.token);
    const other = await open(base, kept.path, kept.token);
    expect(await stateAfter(here.ended, 300)).toBe('open');
    expect((await invoke(t, 'rest', ws.token, 'revoke_access_token', { id: revoked.tokenId })).status).toBe(200);
    await here.ended;
    await there.ended;
    expect(await stateAfter(other.ended, 500)).toBe('open');
  }, 30_000);

  it('ends when its connection is disabled', async () => {
    const disabled = await issued();
    const stream = await open(base, disabled.path, disabled.token);
    expect((await invoke(t, 'rest', ws.token, 'disable_connection', { connectionGuid: disabled.connectionGuid })).status).toBe(200);
    await stream.ended;
  }, 30_000);
});

describe('a 2026-07-28 listen ended by the gateway', () => {
  it('says so first: notifications/cancelled naming the listen request, with the reason', async () => {
    const cut = await issued();
    const res = await rawListen(base + cut.path, cut.token, 'listen-7', streams.signal);
    expect(res.status).toBe(200);
    let text = '';
    const reading = (async () => {
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      try {
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
      } catch {
        // Cut off after the farewell.
      }
    })();
    await vi.waitFor(() => expect(text).toContain('notifications/subscriptions/acknowledged'), { timeout: 10_000 });
    expect((await invoke(t, 'rest', ws.token, 'disable_connection', { connectionGuid: cut.connectionGuid })).status).toBe(200);
    await reading;
    const messages = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { method?: string; params?: { requestId?: unknown; reason?: string } });
    const last = messages.at(-1)!;
    expect(last).toMatchObject({ method: 'notifications/cancelled', params: { requestId: 'listen-7' } });
    expect(last.params!.reason).toMatch(/disabled/);
  }, 30_000);
});
