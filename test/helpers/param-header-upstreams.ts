import http from 'node:http';
import type net from 'node:net';
import { createMcpHandler, LOG_LEVEL_META_KEY, McpServer } from '@modelcontextprotocol/server';
import { McpServer as McpServer2025 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { jsonOf, serveWebHandler } from './serve-web-handler.js';
import { sessionTransports } from './session-transports.js';
import type { Upstream } from './upstreams.js';

/** One POST an upstream received: its method, params, session and the headers of interest. */
export interface SeenRequest {
  method: string;
  params?: Record<string, unknown>;
  sessionId?: string;
  /** Mcp-Param-* headers, names lower-cased. */
  paramHeaders: Record<string, string>;
}

export interface HeaderCheckingUpstream extends Upstream {
  requests: SeenRequest[];
  /** The header name `route` marks `region` with (the tool's schema changes with it, as an upstream's update would). */
  regionHeader: { name: string };
}

/**
 * A 2026-07-28-only upstream built with the v2 SDK (`legacy: 'reject'`), whose server
 * checks SEP-2243 `Mcp-Param-*` headers against the body before a tool runs (HTTP 400,
 * -32020 on a mismatch). Tools: `route` (region: string marked `Region`, priority:
 * integer marked `Priority`, verbose: optional boolean marked `Verbose`, note: an
 * unmarked string) answers what it got; `log` sends a log message at debug, info and
 * warning (the SDK sends only those the request's envelope level admits, none
 * without one) and answers the level it got. Listens on 127.0.0.1.
 */
export async function startHeaderCheckingUpstream(): Promise<HeaderCheckingUpstream> {
  const requests: SeenRequest[] = [];
  const regionHeader = { name: 'Region' };
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'header-checking', version: '2.0.0' }, { capabilities: { logging: {} } });
      server.registerTool(
        'route',
        {
          description: 'Answers the routing arguments it got',
          inputSchema: z.object({
            region: z.string().meta({ 'x-mcp-header': regionHeader.name }),
            priority: z.number().int().meta({ 'x-mcp-header': 'Priority' }),
            verbose: z.boolean().optional().meta({ 'x-mcp-header': 'Verbose' }),
            note: z.string().optional(),
          }),
        },
        async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
      );
      server.registerTool('log', { description: 'Logs at debug, info and warning', inputSchema: z.object({}) }, async (_args, ctx) => {
        for (const level of ['debug', 'info', 'warning'] as const) await ctx.mcpReq.log(level, `at ${level}`);
        const level = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY];
        return { content: [{ type: 'text', text: `level ${String(level ?? 'none')}` }] };
      });
      return server;
    },
    { legacy: 'reject' },
  );
  const served = await serveWebHandler(handler, { seen: (body, req) => record(requests, req, body) });
  return {
    url: served.url,
    requests,
    regionHeader,
    close: async () => {
      await handler.close();
      await served.close();
    },
  };
}

/**
 * A 2025 upstream built with the 1.x SDK (sessions, logging capability) that records
 * every POST, so a test sees which session got which logging/setLevel before a call.
 * Tool `log` sends a log message at debug, info and warning through the SDK's
 * per-session filter. Listens on 127.0.0.1.
 */
export async function startSessionLoggingUpstream(): Promise<Upstream & { requests: SeenRequest[] }> {
  const requests: SeenRequest[] = [];
  const build = () => {
    const server = new McpServer2025({ name: 'session-logging', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('log', { description: 'Logs at debug, info and warning' }, async (extra) => {
      for (const level of ['debug', 'info', 'warning'] as const) await server.sendLoggingMessage({ level, data: `at ${level}` }, extra.sessionId);
      return { content: [{ type: 'text', text: 'logged' }] };
    });
    return server;
  };
  const sessions = sessionTransports(build);
  const httpServer = http.createServer(async (req, res) => {
    try {
      const text = (await readBody(req)).toString();
      record(requests, req, Buffer.from(text));
      const body = text ? (JSON.parse(text) as unknown) : undefined;
      await sessions.serve(req, res, body);
    } catch {
      res.destroy();
    }
  });
  const port = await listen(httpServer);
  return { url: `http://127.0.0.1:${port}/mcp`, requests, close: () => close(httpServer) };
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function record(requests: SeenRequest[], req: http.IncomingMessage, body: Buffer): void {
  if (req.method !== 'POST') return;
  const parsed = jsonOf<{ method?: unknown; params?: Record<string, unknown> }>(body);
  if (typeof parsed?.method !== 'string') return;
  const paramHeaders: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('mcp-param-') && typeof v === 'string') paramHeaders[k] = v;
  const sessionId = req.headers['mcp-session-id'];
  requests.push({
    method: parsed.method,
    ...(parsed.params ? { params: parsed.params } : {}),
    ...(typeof sessionId === 'string' ? { sessionId } : {}),
    paramHeaders,
  });
}

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
