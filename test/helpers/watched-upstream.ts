import http from 'node:http';
import type net from 'node:net';
import { pipeline, Readable } from 'node:stream';
import { createMcpHandler, InMemoryServerEventBus, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { McpServer as McpServer2025 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Upstream } from './upstreams.js';

export const WATCHED_URIS = ['watch://alpha', 'watch://beta'] as const;

export interface WatchedUpstream extends Upstream {
  /** The `resourceSubscriptions` of every `subscriptions/listen` it was sent, in order. */
  listens: string[][];
  /** How many of its `subscriptions/listen` streams are open now. */
  openListens(): number;
}

/**
 * A 2026-07-28-only upstream (v2 SDK, `legacy: 'reject'`) whose resources change:
 * `watch://alpha` and `watch://beta` read as `<uri> v<n>`, and the tool `touch {uri}`
 * bumps one's version and publishes `notifications/resources/updated` for it to the
 * `subscriptions/listen` streams that subscribed to it; the template `watch://item/{id}`
 * gives any number of others. It declares `resources.subscribe`. Listens on 127.0.0.1.
 */
export async function startWatchedUpstream(): Promise<WatchedUpstream> {
  const versions = new Map<string, number>(WATCHED_URIS.map((uri) => [uri, 1]));
  const bus = new InMemoryServerEventBus();
  const listens: string[][] = [];
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'watched', version: '2.0.0' }, { capabilities: { tools: {}, resources: { subscribe: true, listChanged: true } } });
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
      return server;
    },
    { legacy: 'reject', bus },
  );
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      try {
        const parsed = JSON.parse(body.toString()) as { method?: unknown; params?: { notifications?: { resourceSubscriptions?: string[] } } };
        if (parsed.method === 'subscriptions/listen') listens.push(parsed.params?.notifications?.resourceSubscriptions ?? []);
      } catch {
        /* not JSON: the handler answers it */
      }
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const response = await handler.fetch(
        new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body } : {}) }),
      );
      res.writeHead(response.status, Object.fromEntries(response.headers));
      // pipeline: a client that goes away cancels the stream (and the SDK ends its listen).
      if (response.body) pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), res, () => undefined);
      else res.end();
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const port = (httpServer.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    listens,
    openListens: () => bus.listenerCount,
    close: async () => {
      await handler.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
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
