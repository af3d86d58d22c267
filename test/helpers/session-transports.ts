import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/**
 * The sessions of a 2025 upstream built with the 1.x SDK, as a sessionful server keeps
 * them: a request without a session id gets a new session (its initialize) from a server
 * `build` makes, one with an id the upstream does not know is a 404 (-32001, "Session
 * not found"), any other goes to its session's transport. `forget` drops every session
 * and ends its streams (as an upstream that restarted), `close` closes them, `open`
 * counts them.
 */
export function sessionTransports(build: () => McpServer): {
  serve: (req: http.IncomingMessage, res: http.ServerResponse, body: unknown) => Promise<void>;
  forget: () => void;
  close: () => Promise<void>;
  open: () => number;
} {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse, body: unknown): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (typeof sessionId === 'string') {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      const fresh: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, fresh),
        onsessionclosed: (id) => void transports.delete(id),
      });
      await build().connect(fresh);
      transport = fresh;
    }
    await transport.handleRequest(req, res, body);
  };
  return {
    serve,
    forget: () => {
      const gone = [...transports.values()];
      transports.clear();
      for (const transport of gone) void transport.close().catch(() => undefined);
    },
    open: () => transports.size,
    close: async () => {
      for (const transport of transports.values()) await transport.close().catch(() => undefined);
    },
  };
}
