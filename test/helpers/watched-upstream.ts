import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { createMcpHandler, InMemoryServerEventBus, McpServer, ResourceTemplate, type SubscriptionFilter } from '@modelcontextprotocol/server';
import { McpServer as McpServer2025 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { jsonOf, serveWebHandler } from './serve-web-handler.js';
import type { Upstream } from './upstreams.js';

export const WATCHED_URIS = ['watch://alpha', 'watch://beta'] as const;

export interface WatchedUpstream extends Upstream {
  /** The `resourceSubscriptions` of every `subscriptions/listen` it was sent, in order ([] for none). */
  listens: string[][];
  /** The whole filter (`notifications`) of every `subscriptions/listen` it was sent, in order. */
  filters: SubscriptionFilter[];
  /** How many of its `subscriptions/listen` streams are open now. */
  openListens(): number;
  /** Ends every open `subscriptions/listen` stream from its side (cuts their connections), and goes on serving. */
  endListens(): void;
}

/**
 * A 2026-07-28-only upstream (v2 SDK, `legacy: 'reject'`) whose resources change:
 * `watch://alpha` and `watch://beta` read as `<uri> v<n>`, and the tool `touch {uri}`
 * bumps one's version and publishes `notifications/resources/updated` for it to the
 * `subscriptions/listen` streams that subscribed to it; the template `watch://item/{id}`
 * gives any number of others. It declares `resources.subscribe`. The tool `grow {name}`
 * adds a tool of that name and publishes `notifications/tools/list_changed`; it declares
 * `listChanged` for tools and resources (neither with `listChanged: false`), not prompts
 * (it has none). Listens on 127.0.0.1.
 */
export async function startWatchedUpstream(opts: { listChanged?: boolean } = {}): Promise<WatchedUpstream> {
  const listChanged = opts.listChanged ?? true;
  const versions = new Map<string, number>(WATCHED_URIS.map((uri) => [uri, 1]));
  const bus = new InMemoryServerEventBus();
  const listens: string[][] = [];
  const filters: SubscriptionFilter[] = [];
  const grown = new Set<string>();
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(
        { name: 'watched', version: '2.0.0' },
        { capabilities: { tools: { listChanged }, resources: { subscribe: true, listChanged } } },
      );
      for (const uri of WATCHED_URIS)
        server.registerResource(uri.slice('watch://'.length), uri, { mimeType: 'text/plain' }, async () => ({
          contents: [{ uri, text: `${uri} v${versions.get(uri)}` }],
        }));
      // Any number of subscribable URIs, for the limits.
      server.registerResource('item', new ResourceTemplate('watch://item/{id}', { list: undefined }), { mimeType: 'text/plain' }, async (uri) => ({
        contents: [{ uri: uri.href, text: uri.href }],
      }));
      server.registerTool('touch', { description: 'Changes a watched resource', inputSchema: z.object({ uri: z.string() }) }, async ({ uri }) => {
        versions.set(uri, (versions.get(uri) ?? 0) + 1);
        bus.publish({ kind: 'resource_updated', uri });
        return { content: [{ type: 'text', text: `${uri} is now v${versions.get(uri)}` }] };
      });
      server.registerTool('grow', { description: 'Adds a tool', inputSchema: z.object({ name: z.string() }) }, async ({ name }) => {
        grown.add(name);
        bus.publish({ kind: 'tools_list_changed' });
        return { content: [{ type: 'text', text: `${name} added` }] };
      });
      for (const name of grown) server.registerTool(name, { description: 'A grown tool' }, async () => ({ content: [{ type: 'text', text: name }] }));
      return server;
    },
    { legacy: 'reject', bus },
  );
  const served = await serveWebHandler(handler, {
    seen: (body) => {
      const parsed = jsonOf<{ method?: unknown; params?: { notifications?: SubscriptionFilter } }>(body);
      if (parsed?.method !== 'subscriptions/listen') return;
      listens.push(parsed.params?.notifications?.resourceSubscriptions ?? []);
      filters.push(parsed.params?.notifications ?? {});
    },
  });
  return {
    url: served.url,
    listens,
    filters,
    openListens: () => bus.listenerCount,
    endListens: () => served.dropConnections(),
    close: async () => {
      await handler.close();
      await served.close();
    },
  };
}

/**
 * A 2025 upstream (1.x SDK, stateless) with one resource, `old://gamma`, that takes
 * resources/subscribe and resources/unsubscribe itself and records them as
 * `subscribe <uri>` / `unsubscribe <uri>`. Listens on 127.0.0.1.
 */
export async function startSubscribable2025Upstream(): Promise<Upstream & { seen: string[] }> {
  const seen: string[] = [];
  const httpServer = http.createServer(async (req, res) => {
    try {
      const server = new McpServer2025({ name: 'subscribable-2025', version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
      server.registerResource('gamma', 'old://gamma', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'old://gamma', text: 'gamma' }] }));
      server.server.setRequestHandler(SubscribeRequestSchema, async (request) => (seen.push(`subscribe ${request.params.uri}`), {}));
      server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => (seen.push(`unsubscribe ${request.params.uri}`), {}));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined);
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const port = (httpServer.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

/**
 * A 2025 upstream with sessions (1.x SDK, Streamable HTTP): `changeTools` sends
 * tools/list_changed on every open session's event stream; `seen` counts the GET
 * streams and DELETEs it was sent. An unknown method without a session (the v2
 * client's server/discover probe) is a JSON-RPC -32601 in a 200. `subscribable`: it
 * also offers `sess://doc`, and answers a subscription with an update of it.
 */
export async function startSessionServer(opts: { subscribable?: boolean } = {}) {
  const sessions = new Map<string, McpServer2025>();
  const seen = { gets: 0, deletes: 0 };
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
      if (req.method === 'GET') {
        seen.gets++;
        getStreams.add(res);
        res.on('close', () => getStreams.delete(res));
      }
      if (req.method === 'DELETE') seen.deletes++;
      const id = req.headers['mcp-session-id'];
      const known = typeof id === 'string' ? transports.get(id) : undefined;
      if (known) return await known.handleRequest(req, res, body);
      if (req.method !== 'POST' || body?.method !== 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ jsonrpc: '2.0', id: body?.id ?? null, error: { code: -32601, message: 'Method not found' } }));
      }
      const server = new McpServer2025({ name: 'sessions', version: '1.0.0' }, opts.subscribable ? { capabilities: { resources: { subscribe: true } } } : {});
      server.registerTool('ping_me', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
      if (opts.subscribable) {
        // One resource, whose subscription is answered with an update on the session's stream a moment later.
        server.registerResource('doc', 'sess://doc', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'sess://doc', text: 'doc' }] }));
        server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
          setTimeout(() => void server.server.sendResourceUpdated({ uri: request.params.uri }).catch(() => undefined), 100);
          return {};
        });
      }
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, server);
          transports.set(sid, transport);
        },
        onsessionclosed: (sid) => {
          sessions.delete(sid);
          transports.delete(sid);
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch {
      res.destroy();
    }
  });
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const getStreams = new Set<http.ServerResponse>();
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as net.AddressInfo).port}/mcp`,
    seen,
    changeTools: () => {
      for (const server of sessions.values()) server.sendToolListChanged();
    },
    /** Cuts every open session stream (GET), as a proxy cuts an idle one; the sessions stay. */
    cutStreams: () => {
      for (const res of getStreams) res.destroy();
    },
    close: async () => {
      for (const server of sessions.values()) await server.close().catch(() => undefined);
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
