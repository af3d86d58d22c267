import http from 'node:http';
import type net from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CreateMessageResultSchema, ElicitResultSchema, ListRootsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { sessionTransports } from './session-transports.js';
import type { Upstream } from './upstreams.js';

export interface AskingUpstream extends Upstream {
  /** How many times each tool ran (a bridged call must run once, not once per round). */
  runs: Record<string, number>;
  /** Client capabilities each session declared at initialize. */
  declared: Record<string, unknown>[];
  /** Forgets every session and ends its streams, as a restarted upstream would: their ids are answered 404. */
  forgetSessions(): void;
  /** The sessions it knows (ended with DELETE, or forgotten). */
  openSessions(): number;
  /** The sessions' own event streams (GET) open now. */
  openStreams(): number;
}

/**
 * A 2025 upstream built with the 1.x SDK (sessions, answers as event streams) whose
 * tools ask the host for input during the call with server-to-client requests:
 * `ask-confirm` (form elicitation), `ask-sample` (sampling), `ask-roots` (roots),
 * `ask-twice` (an elicitation, then sampling), `slow-confirm` (progress first),
 * `ask-roots-aside` (roots asked on the session's own stream, not the call's) and
 * `hold` (answers after a while).
 * The SDK sends such a request only to a client that declared the capability.
 * Listens on 127.0.0.1.
 */
export async function startAskingUpstream(): Promise<AskingUpstream> {
  const runs: Record<string, number> = {};
  const declared: Record<string, unknown>[] = [];
  const ran = (name: string) => (runs[name] = (runs[name] ?? 0) + 1);
  const build = () => {
    const server = new McpServer({ name: 'asking-2025', version: '1.0.0' });
    const confirmSchema = { type: 'object' as const, properties: { ok: { type: 'boolean' as const } }, required: ['ok'] };
    server.registerTool('ask-confirm', { description: 'Asks the host to confirm', inputSchema: { action: z.string() } }, async ({ action }, extra) => {
      ran('ask-confirm');
      const answer = await extra.sendRequest(
        { method: 'elicitation/create', params: { message: `Confirm ${action}?`, requestedSchema: confirmSchema } },
        ElicitResultSchema,
      );
      return { content: [{ type: 'text', text: `${action}: ${answer.action} ${JSON.stringify(answer.content ?? {})}` }] };
    });
    server.registerTool('ask-sample', { description: 'Asks the host for a completion', inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
      ran('ask-sample');
      const answer = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 20 } },
        CreateMessageResultSchema,
      );
      return { content: [{ type: 'text', text: `model ${answer.model} said ${(answer.content as { text?: string }).text ?? ''}` }] };
    });
    server.registerTool('ask-roots', { description: "Lists the host's roots" }, async (extra) => {
      ran('ask-roots');
      const answer = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
      return { content: [{ type: 'text', text: `roots: ${answer.roots.map((r) => r.uri).join(', ')}` }] };
    });
    // Asked outside the call's stream (no related request: on the session's GET stream), as server-everything asks for roots.
    server.registerTool('ask-roots-aside', { description: "Lists the host's roots, asked on the session's own stream" }, async () => {
      ran('ask-roots-aside');
      try {
        const answer = await server.server.listRoots();
        return { content: [{ type: 'text', text: `roots: ${answer.roots.map((r) => r.uri).join(', ')}` }] };
      } catch (err) {
        return { content: [{ type: 'text', text: `roots refused: ${err instanceof Error ? err.message : String(err)}` }] };
      }
    });
    server.registerTool('hold', { description: 'Answers after `ms`', inputSchema: { ms: z.number() } }, async ({ ms }) => {
      ran('hold');
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: 'text', text: `held ${ms} ms` }] };
    });
    server.registerTool('ask-twice', { description: 'Asks for a name, then for a completion' }, async (extra) => {
      ran('ask-twice');
      const named = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
        },
        ElicitResultSchema,
      );
      const name = String(named.content?.name ?? '?');
      const greeting = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: `Greet ${name}` } }], maxTokens: 20 } },
        CreateMessageResultSchema,
      );
      return { content: [{ type: 'text', text: `${name}: ${(greeting.content as { text?: string }).text ?? ''}` }] };
    });
    server.registerTool('slow-confirm', { description: 'Reports progress, asks to confirm, reports progress again' }, async (extra) => {
      ran('slow-confirm');
      const token = extra._meta?.progressToken;
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2 } });
      const answer = await extra.sendRequest(
        { method: 'elicitation/create', params: { message: 'Go on?', requestedSchema: confirmSchema } },
        ElicitResultSchema,
      );
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 2, total: 2 } });
      return { content: [{ type: 'text', text: `slow: ${answer.action}` }] };
    });
    server.server.oninitialized = () => declared.push((server.server.getClientCapabilities() ?? {}) as Record<string, unknown>);
    return server;
  };
  const sessions = sessionTransports(build);
  const streams = new Set<http.ServerResponse>();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString();
      const body = text ? (JSON.parse(text) as unknown) : undefined;
      if (req.method === 'GET') {
        streams.add(res);
        res.once('close', () => streams.delete(res));
      }
      await sessions.serve(req, res, body);
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const port = (httpServer.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    runs,
    declared,
    forgetSessions: sessions.forget,
    openSessions: sessions.open,
    // A GET the transport took: its stream is open (200) until it closes.
    openStreams: () => [...streams].filter((res) => res.headersSent && res.statusCode === 200).length,
    close: async () => {
      await sessions.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
