import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream';

/**
 * Serves a fetch-style handler (the v2 SDK's `createMcpHandler`) over node:http on
 * 127.0.0.1, as the test upstreams do: `seen` gets each request's body and headers
 * before the handler does (what a test records), and an answer's stream ends when the
 * client goes away (a listen stream is then cancelled, as behind a real server), and the
 * request's signal aborts when the client closes it before the answer is complete (a
 * handler's `ctx.mcpReq.signal` then fires, as behind a real server).
 * `close` ends the HTTP side; the handler is the caller's to close. `dropConnections`
 * cuts every open connection (its streams end, as when a server restarts) and goes on serving.
 */
export async function serveWebHandler(
  handler: { fetch: (request: Request) => Promise<Response> },
  opts: { port?: number; seen?: (body: Buffer, req: http.IncomingMessage) => void } = {},
): Promise<{ url: string; close: () => Promise<void>; dropConnections: () => void }> {
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      opts.seen?.(body, req);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const closed = new AbortController();
      res.once('close', () => res.writableFinished || closed.abort());
      const response = await handler.fetch(
        new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, signal: closed.signal, ...(req.method === 'POST' ? { body } : {}) }),
      );
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), res, () => undefined);
      else res.end();
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (httpServer.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    dropConnections: () => httpServer.closeAllConnections(),
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

/** A request body as JSON, or undefined when it is not JSON (the handler answers that itself). */
export function jsonOf<T>(body: Buffer): T | undefined {
  try {
    return JSON.parse(body.toString()) as T;
  } catch {
    return undefined;
  }
}
