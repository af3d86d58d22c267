import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import { createMcpHandler, McpServer, type McpHttpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Upstream } from './upstreams.js';

/**
 * An upstream of revision 2026-07-28 only, built with the v2 SDK
 * (`createMcpHandler(factory, { legacy: 'reject' })`): a 2025 initialize is refused
 * with -32022. Tools: `shout` (text), `measure` (structured output); a prompt and a
 * resource. Listens on 127.0.0.1. `publicCache` marks every cacheable result of it
 * `cacheScope: public` (what a gateway must not pass on); `notify` publishes change
 * events to its own `subscriptions/listen` streams.
 */
export async function startModernUpstream(
  opts: { publicCache?: boolean } = {},
): Promise<Upstream & { requests: { method: string; protocol: string | undefined }[]; notify: McpHttpHandler['notify'] }> {
  const requests: { method: string; protocol: string | undefined }[] = [];
  const handler = createMcpHandler(
    () => {
      const hint = { ttlMs: 60_000, cacheScope: 'public' as const };
      const cacheHints = { 'tools/list': hint, 'prompts/list': hint, 'resources/list': hint, 'resources/templates/list': hint, 'resources/read': hint };
      const server = new McpServer({ name: 'modern-only', version: '2.0.0' }, opts.publicCache ? { cacheHints } : {});
      server.registerTool('shout', { description: 'Upper-cases a text', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
        content: [{ type: 'text', text: text.toUpperCase() }],
      }));
      server.registerTool(
        'measure',
        { description: 'Measures a text', inputSchema: z.object({ text: z.string() }), outputSchema: z.object({ length: z.number() }) },
        async ({ text }) => ({ content: [{ type: 'text', text: String(text.length) }], structuredContent: { length: text.length } }),
      );
      server.registerPrompt('haiku', { description: 'A haiku prompt' }, () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'Write a haiku.' } }],
      }));
      server.registerResource('motd', 'modern://motd', { mimeType: 'text/plain' }, async () => ({
        contents: [{ uri: 'modern://motd', text: 'hello from 2026' }],
      }));
      return server;
    },
    { legacy: 'reject' },
  );
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      try {
        requests.push({ method: String(JSON.parse(body.toString()).method), protocol: req.headers['mcp-protocol-version'] as string | undefined });
      } catch {
        /* not JSON: the handler answers it */
      }
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const response = await handler.fetch(
        new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body } : {}) }),
      );
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) Readable.fromWeb(response.body as import('node:stream/web').ReadableStream).pipe(res);
      else res.end();
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const port = (httpServer.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    notify: handler.notify,
    close: async () => {
      await handler.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
