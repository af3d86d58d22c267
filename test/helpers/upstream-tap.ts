import http from 'node:http';
import type net from 'node:net';
import { jsonOf } from './serve-web-handler.js';
import type { Upstream } from './upstreams.js';

/** A JSON-RPC message an upstream was sent through the tap, with the session it was sent in. */
export interface TappedMessage {
  method?: string;
  id?: string | number;
  params?: Record<string, unknown>;
  /** An answer's error, when the message is the client's error answer to the upstream's request. */
  error?: { code: number; message: string };
  sessionId: string | undefined;
}

export interface UpstreamTap extends Upstream {
  /** Every JSON-RPC message POSTed to the upstream, in order. */
  messages: TappedMessage[];
  /** The ids of requests whose HTTP exchange the client closed before the upstream's answer was complete. */
  abandoned: (string | number)[];
  /** The sessions the client ended (DELETE), in order. */
  ended: string[];
}

/**
 * A loopback HTTP proxy in front of an upstream (a process the test cannot look into,
 * such as server-everything) that records what the upstream is sent: each POSTed
 * JSON-RPC message, each request whose exchange the client closed before the answer
 * ended (the upstream's request is then closed too), and each session ended. Bodies and answers pass
 * unchanged, streams included. A tools/call whose arguments carry `tapHoldMs` reaches
 * the upstream that much later (the upstream's schema drops the argument): a client
 * that closes its request meanwhile has had no answer begun.
 */
export async function startUpstreamTap(target: string): Promise<UpstreamTap> {
  const upstream = new URL(target);
  const messages: TappedMessage[] = [];
  const abandoned: (string | number)[] = [];
  const ended: string[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const message = req.method === 'POST' ? jsonOf<Omit<TappedMessage, 'sessionId'>>(body) : undefined;
    if (message) messages.push({ ...message, sessionId });
    if (req.method === 'DELETE' && sessionId) ended.push(sessionId);
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.once('close', () => {
      if (res.writableFinished) return;
      if (message?.method !== undefined && message.id !== undefined) abandoned.push(message.id);
      forward.destroy();
    });
    const holdMs = (message?.params?.arguments as { tapHoldMs?: unknown } | undefined)?.tapHoldMs;
    if (typeof holdMs === 'number') await new Promise((resolve) => setTimeout(resolve, holdMs));
    forward.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}${upstream.pathname}`,
    messages,
    abandoned,
    ended,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
