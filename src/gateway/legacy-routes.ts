import { isCancelledAnswer } from './relay.js';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import { CallRecord } from './call-record.js';
import type { Catalog, Catalogs } from './catalog.js';
import { ERRORS, type GatewayProxy } from './proxy.js';
import type { GatewaySession } from './session-id.js';
import { GATEWAY_ROUTE_OPTIONS } from './rate-limits.js';
import { followHostEvents } from './event-stream.js';
import { envelopeProblem } from './message-envelope.js';
import { bodyTypeProblem } from './body-type.js';
import { sseMessage } from './sse.js';
import { hostTraceContext } from './trace-context.js';
import type { UpstreamFetch } from './upstream-client.js';

/** An open legacy stream: where the answers to its POSTed messages go. */
interface LegacyStream {
  caller: GatewayCaller;
  out: ServerResponse;
  /** Set by the host's initialize. */
  session: GatewaySession | null;
  /** The catalog the session's upstream sessions were opened from (their URLs and credentials, to end them). */
  catalog: Catalog | null;
  abort: AbortController;
  /** Stops following the session's upstreams and workspace (followHostEvents), once it has a session. */
  stopFollowing?: () => void;
}

export interface LegacyRouteDeps {
  admit(request: FastifyRequest<{ Params: { gatewayGuid: string } }>, reply: FastifyReply): Promise<GatewayCaller | null>;
  /** Takes one of the caller's open-stream slots until the stream closes; answers the refusal itself and returns false. */
  holdStream(caller: GatewayCaller, reply: FastifyReply): Promise<boolean>;
  /** Ends the stream once the request's token no longer admits its caller (access-watch.ts). */
  endWhenAccessEnds(request: FastifyRequest, caller: GatewayCaller, out: ServerResponse): void;
  rpcError(code: number, message: string, data?: Record<string, unknown>): unknown;
  proxy: GatewayProxy;
  catalogs: Catalogs;
  fetch: UpstreamFetch;
  postOptions: RouteShorthandOptions;
}

/** Comments keep idle proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

/**
 * The legacy HTTP+SSE transport (protocol 2024-11-05) for older hosts, on the
 * same proxy core as `/mcp`: GET `/gateways/{guid}/sse` opens a stream whose first
 * `endpoint` event names `/gateways/{guid}/message?sessionId=...`; messages POSTed
 * there are accepted (202) and answered on the stream. The protocol ties a session
 * to its open stream, so these sessions live in the process holding the stream:
 * a POST that reaches another replica answers 404 (route `/sse` with sticky sessions).
 * Once initialized, the stream also carries what a Streamable HTTP host's GET stream
 * does (followHostEvents): list changes, resource updates, the upstreams' requests.
 */
export function registerLegacyGatewayRoutes(
  app: FastifyInstance,
  services: Pick<Services, 'callLogs' | 'config' | 'configChanges' | 'logger'>,
  deps: LegacyRouteDeps,
): void {
  const streams = new Map<string, LegacyStream>();
  app.addHook('onClose', async () => {
    for (const stream of streams.values()) stream.abort.abort();
  });

  app.get<{ Params: { gatewayGuid: string } }>('/gateways/:gatewayGuid/sse', GATEWAY_ROUTE_OPTIONS, async (request, reply) => {
    const caller = await deps.admit(request, reply);
    if (!caller || !(await deps.holdStream(caller, reply))) return reply;
    const id = randomBytes(16).toString('hex');
    const stream: LegacyStream = { caller, out: reply.raw, session: null, catalog: null, abort: new AbortController() };
    streams.set(id, stream);
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    reply.raw.write(`event: endpoint\ndata: /gateways/${encodeURIComponent(request.params.gatewayGuid)}/message?sessionId=${id}\n\n`);
    deps.endWhenAccessEnds(request, caller, reply.raw);
    const keepalive = setInterval(() => reply.raw.write(': keepalive\n\n'), KEEPALIVE_MS);
    await new Promise<void>((resolve) => {
      const done = () => resolve();
      reply.raw.once('close', done);
      stream.abort.signal.addEventListener('abort', done, { once: true });
    });
    clearInterval(keepalive);
    streams.delete(id);
    stream.abort.abort();
    stream.stopFollowing?.();
    if (!reply.raw.writableEnded) reply.raw.end();
    // The transport ties the session to this stream: it ends here, upstream too.
    if (stream.session && stream.catalog) await deps.proxy.endSession(stream.session, stream.catalog, hostTraceContext(undefined, undefined, undefined));
  });

  app.post<{ Params: { gatewayGuid: string }; Querystring: { sessionId?: string } }>(
    '/gateways/:gatewayGuid/message',
    deps.postOptions,
    async (request, reply) => {
      const caller = await deps.admit(request, reply);
      if (!caller) return reply;
      const stream = streams.get(String(request.query.sessionId ?? ''));
      // Another connection's stream is as unknown as a missing one.
      if (!stream || stream.caller.connectionGuid !== caller.connectionGuid) {
        return reply
          .code(404)
          .send(deps.rpcError(ERRORS.sessionNotFound, 'Session not found: open a new stream at /sse (the stream may be held by another replica).'));
      }
      const wrongType = bodyTypeProblem(request.headers);
      if (wrongType) return reply.code(415).send(deps.rpcError(ERRORS.invalidRequest, wrongType));
      const body = request.body as unknown;
      const invalid = envelopeProblem(body);
      if (invalid) return reply.code(400).send(deps.rpcError(ERRORS.invalidRequest, invalid));
      const message = body as JSONRPCMessage;
      const trace = hostTraceContext(header(request, 'traceparent'), header(request, 'tracestate'), request.body);
      const requestBytes = Number(request.headers['content-length'] ?? 0) || Buffer.byteLength(JSON.stringify(body));
      const record = new CallRecord(services, caller, trace, message, requestBytes, request.headers, stream.session);
      const catalog = await deps.catalogs.forCaller(caller);
      // Answered on the stream: the POST is accepted at once, the work goes on while the stream is open.
      void (async () => {
        const answer = await deps.proxy.handle(
          { caller, catalog, session: stream.session, trace, signal: stream.abort.signal, record, renewsUpstreamSessions: true },
          message,
        );
        if (answer.kind === 'json') {
          // A request the host cancelled is not answered (the stream goes on).
          if (!isCancelledAnswer(answer.message)) write(stream, answer.message);
          if (answer.newSession && !stream.abort.signal.aborted) {
            // Initialized again on the same stream: the former session ends here.
            stream.stopFollowing?.();
            if (stream.session && stream.catalog) void deps.proxy.endSession(stream.session, stream.catalog, trace);
            const session = (stream.session = answer.newSession);
            stream.catalog = catalog;
            stream.stopFollowing = followHostEvents(
              {
                services,
                catalogs: deps.catalogs,
                caller,
                catalog,
                session,
                subscriptions: deps.proxy.subscriptions,
                tasks: deps.proxy.tasks,
                fetch: deps.fetch,
                renewsUpstreamSessions: true,
              },
              (event) => write(stream, event),
            );
          }
        } else if (answer.kind === 'stream') {
          for await (const out of answer.messages) if (!isCancelledAnswer(out)) write(stream, out);
        } else if (answer.kind === 'session-expired') {
          const id = (message as { id?: RequestId }).id;
          if (id !== undefined)
            write(stream, {
              jsonrpc: '2.0',
              id,
              error: { code: ERRORS.sessionNotFound, message: 'Session expired upstream: open a new stream.' },
            } as JSONRPCMessage);
        }
      })().catch((err: unknown) => services.logger.error({ err: err instanceof Error ? err.message : String(err) }, 'legacy gateway message failed'));
      return reply.code(202).send();
    },
  );
}

function write(stream: LegacyStream, message: JSONRPCMessage): void {
  if (stream.out.destroyed || stream.out.writableEnded) return;
  stream.out.write(sseMessage(message));
  // A response corks its socket until the next tick: uncorked here, the event leaves now, ahead of the call-log
  // row (written right after it is handed on, call-outcome.ts) rather than behind it. One event is one write either way.
  stream.out.socket?.uncork();
}

/** One request header's value (the first, when repeated). */
export function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
