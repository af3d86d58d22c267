import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { startEverything } from './helpers/upstreams.js';

/**
 * The SSE polling pattern (MCP 2025-11-25): an upstream answers a tools/call with an
 * event stream, sends an event id and a retry, closes the stream mid-call and serves
 * the rest when the client comes back with GET and Last-Event-ID. The gateway resumes
 * it and the host gets the result.
 */
interface Pending {
  id: unknown;
  text: string;
}

async function startPollingUpstream(): Promise<{ url: string; resumedWith: string[]; close(): Promise<void> }> {
  const pending = new Map<string, Pending>();
  const resumedWith: string[] = [];
  const server = http.createServer(async (req, res) => {
    const session = String(req.headers['mcp-session-id'] ?? '');
    if (req.method === 'GET') {
      const last = req.headers['last-event-id'];
      const waiting = pending.get(session);
      if (typeof last !== 'string' || !waiting) return void res.writeHead(405).end();
      resumedWith.push(last);
      pending.delete(session);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `id: ev-2\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: waiting.id, result: { content: [{ type: 'text', text: waiting.text }] } })}\n\n`,
      );
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body) as { id?: unknown; method: string; params?: { name?: string; arguments?: { text?: string } } };
    const json = (result: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    switch (message.method) {
      case 'initialize':
        return json(
          { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'polling', version: '1.0.0' } },
          { 'mcp-session-id': `s-${Math.random().toString(36).slice(2)}` },
        );
      case 'notifications/initialized':
        return void res.writeHead(202).end();
      case 'tools/list':
        return json({
          tools: [
            {
              name: 'slow_echo',
              description: 'Answers after the stream was resumed',
              inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
            },
          ],
        });
      case 'tools/call':
        pending.set(session, { id: message.id, text: `resumed: ${message.params?.arguments?.text ?? ''}` });
        // A priming event (id, no data) and a retry, then the stream ends mid-call.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void res.end('id: ev-1\nretry: 20\ndata:\n\n');
      default:
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`,
    resumedWith,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

let t: TestApp;
let upstream: Awaited<ReturnType<typeof startPollingUpstream>>;
let client: Client;

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestApp(), startPollingUpstream()]);
  const base = await listenLoopback(t);
  const ws = await newWorkspace(t);
  const { serverGuid } = await registerServer(t, ws, { name: 'Polling', url: upstream.url, authType: 'none' });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Resuming' });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  client = await gatewayClient(issued.body.url.replace(t.config.publicBaseUrl, base), issued.body.token);
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await closeClients();
  // The raw fetches' keep-alive sockets would hold the server's close for its keep-alive timeout.
  t?.app.server.closeAllConnections();
  await t?.close();
  await upstream?.close();
});

describe('an upstream that closes its stream mid-call', () => {
  it('is resumed with Last-Event-ID and the host gets the result', async () => {
    const result = (await client.callTool({ name: 'polling__slow_echo', arguments: { text: 'hello' } })) as CallToolResult;
    expect((result.content[0] as { text: string }).text).toBe('resumed: hello');
    expect(upstream.resumedWith).toEqual(['ev-1']);
  });
});

describe("a host's own resumption of a gateway stream", () => {
  let everything: Awaited<ReturnType<typeof startEverything>>;
  let url: string;
  let gatewayToken: string;
  beforeAll(async () => {
    everything = await startEverything('streamableHttp');
    const base = `http://127.0.0.1:${(t.app.server.address() as net.AddressInfo).port}`;
    const ws = await newWorkspace(t);
    const { serverGuid } = await registerServer(t, ws, { name: 'everything', url: everything.url, authType: 'none' });
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Resumable' });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
    const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
    gatewayToken = issued.body.token;
    url = issued.body.url.replace(t.config.publicBaseUrl, base);
  }, 60_000);
  afterAll(async () => {
    await everything?.close();
  });

  it('replays what the host missed, then the rest, on GET with Last-Event-ID', async () => {
    const headers = { authorization: `Bearer ${gatewayToken}`, 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' };
    const init = await fetch(url, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const inSession = { ...headers, 'mcp-session-id': session };
    await (
      await fetch(url, {
        method: 'POST',
        headers: { ...inSession, accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      })
    ).text();
    // An event stream only (no JSON), then the connection drops after the first event.
    const abort = new AbortController();
    const call = await fetch(url, {
      method: 'POST',
      headers: { ...inSession, accept: 'text/event-stream' },
      signal: abort.signal,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 42,
        method: 'tools/call',
        params: { name: 'everything__trigger-long-running-operation', arguments: { duration: 1.5, steps: 5 }, _meta: { progressToken: 'p1' } },
      }),
    });
    expect(call.headers.get('content-type')).toContain('text/event-stream');
    const reader = call.body!.getReader();
    let text = '';
    while (!/\nid: [^\n]+\n[\s\S]*\n\n/.test(`\n${text}`)) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the stream ended before an event with an id: ${text}`);
      text += new TextDecoder().decode(chunk.value);
    }
    const firstId = /id: ([^\n]+)\n/.exec(text)![1]!;
    abort.abort();
    const resumed = await fetch(url, { headers: { ...inSession, accept: 'text/event-stream', 'last-event-id': firstId } });
    const rest = await resumed.text();
    const messages = rest
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(messages.at(-1)).toMatchObject({ id: 42, result: { content: [{ type: 'text' }] } });
    // Nothing is sent twice: the event the host had is not replayed.
    expect(rest).not.toContain(`id: ${firstId}\n`);
    expect(messages.filter((m) => m.method === 'notifications/progress').length).toBeGreaterThan(0);
  });
});
