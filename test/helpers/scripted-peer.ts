import http from 'node:http';
import { buildToolServer, closeServer, listen, serveStateless } from './upstreams.js';

/** An HTTP answer a scripted peer gives to every request. */
export interface PeerAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface ScriptedPeer {
  /** The MCP endpoint (`/mcp`); every other path answers the same way. */
  url: string;
  /** `base + '/token'`: a token endpoint for a headless OAuth identity. */
  tokenEndpoint: string;
  /** What every request is answered with from now on (or made from the request's body); null: a working MCP server (one tool, `whoami`). */
  answer: PeerAnswer | ((requestBody: string) => PeerAnswer) | null;
  close(): Promise<void>;
}

/**
 * A peer on 127.0.0.1 that works until a test scripts a failure, then answers every
 * request with it: an upstream that starts refusing, a token endpoint that refuses a
 * refresh. What a failing peer says (a distinctive header, a credential echoed in a
 * header or the body) is for the tests of an alert's debugContext.
 */
export async function startScriptedPeer(): Promise<ScriptedPeer> {
  const peer: ScriptedPeer = { url: '', tokenEndpoint: '', answer: null, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const answer = peer.answer;
    if (!answer) return void serveStateless(buildToolServer('scripted-peer'), req, res).catch(() => res.destroy());
    // Read what was sent before answering, so the client sees the answer rather than a reset.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const made = typeof answer === 'function' ? answer(Buffer.concat(chunks).toString('utf8')) : answer;
      res.writeHead(made.status, made.headers).end(made.body);
    });
  });
  const base = `http://127.0.0.1:${await listen(server)}`;
  return Object.assign(peer, { url: `${base}/mcp`, tokenEndpoint: `${base}/token`, close: () => closeServer(server) });
}
