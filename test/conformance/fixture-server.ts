import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import {
  createMcpHandler,
  createRequestStateCodec,
  hostHeaderValidationResponse,
  isLegacyRequest,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  McpServer,
  originValidationResponse,
  WebStandardStreamableHTTPServerTransport,
  type EventStore,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import { registerContentTools, registerNotifyingTools, registerPrompts, registerResources, type Shared } from './fixture-features.js';
import { registerAskingTools, registerInputRequiredTools } from './fixture-input-tools.js';
import { registerTaskTools, TASKS_EXTENSION } from './fixture-tasks.js';
import { TaskStore } from '../helpers/task-store.js';

/**
 * The conformance runner's fixture server, written with the v2 SDK: the tools,
 * prompts and resources its server scenarios call by name (`test_*`, `test://…`),
 * served to both eras on one URL. 2026-07-28 requests go to
 * `createMcpHandler(factory, { legacy: 'reject' })`; 2025 requests go to a sessionful
 * streamable HTTP transport per session (the 2025 scenarios need a session: sampling
 * and elicitation as server-to-client requests, subscriptions, the GET stream). One
 * factory backs both, so the eras cannot drift apart. Host and Origin are checked
 * first (the runner's DNS-rebinding scenario). Listens on 127.0.0.1.
 *
 * The 2026-07-28 side also offers the tasks extension (`tasks-*` scenarios; the SDK
 * has no server side for it: fixture-tasks.ts), with its tasks kept across requests;
 * the 2025 side does not (that revision's core tasks are not implemented).
 */

/**
 * One server instance (per 2026-07-28 request, per 2025 session) with everything the
 * scenarios call; `tasks` (2026-07-28 only) adds the tasks extension over that store.
 */
function buildServer(shared: Shared, tasks?: TaskStore): McpServer {
  const server = new McpServer(
    { name: 'conformance-fixture', version: '1.0.0' },
    {
      // No `tools` here: McpServer would install its tools handlers at construction, before
      // registerTaskTools can wrap them; the first registerTool declares `tools: { listChanged: true }`.
      capabilities: {
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        logging: {},
        completions: {},
        // The SDK's capability type does not name extensions yet; it sends them as given.
        ...(tasks ? ({ extensions: { [TASKS_EXTENSION]: {} } } as Record<string, unknown>) : {}),
      },
      requestState: { verify: (state, ctx) => shared.codec.verify(state, ctx) },
    },
  );
  if (tasks) registerTaskTools(server, tasks);
  registerContentTools(server);
  registerNotifyingTools(server, shared);
  registerAskingTools(server);
  registerInputRequiredTools(server, shared);
  registerResources(server);
  registerPrompts(server);
  return server;
}

/** Events of 2025 sessions kept for resumption (Last-Event-ID), in memory. */
function memoryEventStore(): EventStore {
  const events: { id: string; stream: string; message: JSONRPCMessage }[] = [];
  return {
    storeEvent: (stream, message) => {
      const id = `${stream}::${events.length}`;
      events.push({ id, stream, message });
      return Promise.resolve(id);
    },
    replayEventsAfter: async (lastEventId, { send }) => {
      const at = events.findIndex((e) => e.id === lastEventId);
      const stream = events[at]?.stream ?? lastEventId.split('::')[0]!;
      for (const event of events.slice(at + 1)) if (event.stream === stream) await send(event.id, event.message);
      return stream;
    },
  };
}

export interface ConformanceFixture {
  url: string;
  close(): Promise<void>;
}

export async function startConformanceFixture(): Promise<ConformanceFixture> {
  const sessions = new Map<string, { transport: WebStandardStreamableHTTPServerTransport; server: McpServer }>();
  const shared: Shared = {
    codec: createRequestStateCodec<Record<string, unknown>>({ key: randomBytes(32) }),
    listChanged: (kind) => {
      if (kind === 'tools') modern.notify.toolsChanged();
      else modern.notify.promptsChanged();
      for (const { server } of sessions.values()) {
        if (kind === 'tools') server.sendToolListChanged();
        else server.sendPromptListChanged();
      }
    },
  };
  const tasks = new TaskStore();
  const modern = createMcpHandler(() => buildServer(shared, tasks), { legacy: 'reject' });

  /** A 2025 request: the session's own transport, or a new session on initialize. */
  const legacy = async (request: Request, parsedBody: unknown): Promise<Response> => {
    const sessionId = request.headers.get('mcp-session-id');
    const existing = sessionId ? sessions.get(sessionId) : undefined;
    if (existing) return existing.transport.handleRequest(request, { parsedBody });
    const initializing = request.method === 'POST' && (parsedBody as { method?: unknown } | undefined)?.method === 'initialize';
    if (sessionId || !initializing)
      return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }, { status: sessionId ? 404 : 400 });
    const server = buildServer(shared);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      eventStore: memoryEventStore(),
      retryInterval: 200,
      onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody });
  };

  const serve = async (request: Request, body: Buffer): Promise<Response> => {
    const refused = hostHeaderValidationResponse(request, localhostAllowedHostnames()) ?? originValidationResponse(request, localhostAllowedOrigins());
    if (refused) return refused;
    let parsedBody: unknown;
    try {
      parsedBody = body.length ? JSON.parse(body.toString()) : undefined;
    } catch {
      parsedBody = undefined;
    }
    if (await isLegacyRequest(request, parsedBody)) return legacy(request, parsedBody);
    return modern.fetch(request, parsedBody === undefined ? {} : { parsedBody });
  };

  const httpServer = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
        method: req.method,
        headers,
        ...(req.method === 'POST' ? { body } : {}),
      });
      const response = await serve(request, body);
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
    close: async () => {
      tasks.close();
      await modern.close();
      await Promise.all([...sessions.values()].map(({ transport }) => transport.close()));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
