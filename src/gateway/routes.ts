import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/server';
import { bearerChallenge, bearerToken } from '../core/auth/tokens.js';
import { AppError, STORE_RETRY_AFTER_SECONDS } from '../core/errors.js';
import type { Services } from '../core/services.js';
import { GatewayAccess, GatewayAccessError, type GatewayCaller } from './access.js';
import { CallRecord } from './call-record.js';
import { Catalogs } from './catalog.js';
import { ERRORS, GatewayProxy, type HostReply } from './proxy.js';
import { settle } from './call-outcome.js';
import { isAnswerTo, isCancelledAnswer } from './relay.js';
import { GATEWAY_ROUTE_OPTIONS, GatewayRateLimits, MAX_OPEN_STREAMS_PER_CONNECTION, OPEN_STREAMS_RETRY_AFTER_SECONDS, OpenStreams } from './rate-limits.js';
import { SessionIds, type GatewaySession } from './session-id.js';
import { sseMessage } from './sse.js';
import { StreamReplay } from './stream-replay.js';
import { endWhenRefused } from './access-watch.js';
import { HostEventStreams } from './host-event-streams.js';
import { hostTraceContext } from './trace-context.js';
import { UpstreamHealth } from './upstream-health.js';
import { UpstreamClient } from './upstream-client.js';
import { header, registerLegacyGatewayRoutes } from './legacy-routes.js';
import { createModernHostHandler, type ModernHostRequest } from './modern-host.js';
import { isModernMessage } from '../mcp/request-revision.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { DIRECT_SSE_HEADERS, DIRECT_SSE_KEEP_ALIVE_MS, directAnswerStatus, directRequest, type DirectRequest } from './modern-direct.js';
import { paramHeaderRefusal, type ParamHeaderSource } from './mcp-param-headers.js';
import { sendWebResponse, toWebRequest } from '../http/web-request.js';
import { malformedRequestParams } from '../mcp/request-params.js';
import { unsupportedProtocolVersion } from '../mcp/protocol-version.js';
import { acceptsEventStream, acceptsJson } from '../mcp/accept.js';
import { isStoreUnreachable } from '../stores/store-errors.js';
import { EndedSessions } from './ended-sessions.js';
import { envelopeProblem } from './message-envelope.js';
import { batchProblem, replyToBatch } from './batch.js';
import { bodyTypeProblem } from './body-type.js';

const SESSION_HEADER = 'mcp-session-id';
const rpcError = (code: number, message: string, data?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: null,
  error: { code, message, ...(data ? { data } : {}) },
});

/**
 * The gateway's connect URL, `/gateways/{guid}/mcp`: MCP Streamable HTTP for hosts
 * holding a gateway token. POST carries messages, GET opens the session's event
 * stream, DELETE ends the session. Every replica can serve every request: the
 * session travels in its sealed id.
 */
export function registerGatewayRoutes(app: FastifyInstance, services: Services): void {
  const access = new GatewayAccess(services);
  const catalogs = new Catalogs(services);
  const health = new UpstreamHealth(services);
  const upstreams = new UpstreamClient(services.egress);
  const sessionIds = new SessionIds(services.gatewaySessionKey);
  const endedSessions = new EndedSessions(services.db, services.logger, services.config.gateway.cacheTtlMs);
  const replay = new StreamReplay();
  const hostEvents = new HostEventStreams(replay);
  /**
   * The answer when the session names an upstream session that no longer exists: the
   * host must initialize again, and the session is over for good (ended as a DELETE
   * ends it), since the transport says a server that answered 404 for a session answers
   * 404 to every later request with it; a ping or a GET would otherwise still be served.
   */
  const sessionExpiredUpstream = async (reply: FastifyReply, session: GatewaySession | null): Promise<FastifyReply> => {
    if (session)
      await endedSessions
        .end(session)
        .catch((err: unknown) => services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not end a gateway session'));
    return reply.code(404).send(rpcError(ERRORS.sessionNotFound, 'Session expired upstream: initialize a new session.'));
  };
  const proxy = new GatewayProxy(services, catalogs, health, upstreams.fetch);
  const limits = new GatewayRateLimits({
    perConnectionPerMinute: services.config.gateway.rateLimitPerConnectionPerMinute,
    perWorkspacePerMinute: services.config.gateway.rateLimitPerWorkspacePerMinute,
  });
  const openStreams = new OpenStreams();
  app.addHook('onClose', async () => {
    proxy.close();
    hostEvents.close();
    catalogs.close();
    upstreams.close();
  });

  /** Authenticates and applies the rate limits; answers the refusal itself and returns null. */
  const admit = async (request: FastifyRequest<{ Params: { gatewayGuid: string } }>, reply: FastifyReply): Promise<GatewayCaller | null> => {
    let caller: GatewayCaller;
    try {
      caller = await access.check(bearerToken(request.headers.authorization), request.params.gatewayGuid);
    } catch (err) {
      if (!(err instanceof GatewayAccessError)) throw err;
      if (err.status === 401) reply.header('www-authenticate', bearerChallenge(request.headers.authorization));
      await reply.code(err.status).send(rpcError(ERRORS.invalidRequest, err.message));
      return null;
    }
    return (await withinRateLimits(caller, reply)) ? caller : null;
  };

  /** Ends a long-lived stream of the caller the request admitted once the request's token no longer admits it (access-watch.ts). */
  const endWhenAccessEnds = (request: FastifyRequest, caller: GatewayCaller, out: ServerResponse, farewell?: (reason: string) => string) => {
    const token = bearerToken(request.headers.authorization);
    endWhenRefused({
      configChanges: services.configChanges,
      organizationGuid: caller.organizationGuid,
      readmit: () => access.check(token, caller.gatewayGuid),
      out,
      ...(farewell ? { farewell } : {}),
    });
  };

  /** A refusal by one of the gateway's limits: HTTP 429 with Retry-After, -32029 with data.code rate_limited. */
  const rateLimited = (reply: FastifyReply, message: string, retryAfterSeconds: number) =>
    reply
      .code(429)
      .header('retry-after', String(retryAfterSeconds))
      .send(rpcError(ERRORS.rateLimited, message, { code: 'rate_limited', retryAfterSeconds }));

  /** Counts one message against the caller's rate limits; answers the refusal itself and returns false. */
  const withinRateLimits = async (caller: GatewayCaller, reply: FastifyReply): Promise<boolean> => {
    const decision = limits.check(caller.organizationGuid, caller.connectionGuid);
    if (decision.allowed) return true;
    const message = `Rate limit exceeded: at most ${decision.limitPerMinute} requests a minute per ${decision.scope}. Retry after ${decision.retryAfterSeconds} s.`;
    await rateLimited(reply, message, decision.retryAfterSeconds);
    return false;
  };

  /** Takes one of the caller's open-stream slots until the stream closes (OpenStreams); answers the refusal itself and returns false. */
  const holdStream = async (caller: GatewayCaller, reply: FastifyReply): Promise<boolean> => {
    if (openStreams.hold(caller.connectionGuid, reply.raw)) return true;
    const message = `Too many open event streams: at most ${MAX_OPEN_STREAMS_PER_CONNECTION} per connection. Close one, or retry after ${OPEN_STREAMS_RETRY_AFTER_SECONDS} s.`;
    await rateLimited(reply, message, OPEN_STREAMS_RETRY_AFTER_SECONDS);
    return false;
  };

  /** The session the request names; answers itself 400 for a revision the gateway does not speak, 404 when the id is not one of ours for this connection. */
  const sessionOf = async (
    request: FastifyRequest,
    reply: FastifyReply,
    caller: GatewayCaller,
  ): Promise<{ session: GatewaySession | null; id: string | null } | null> => {
    const version = request.headers['mcp-protocol-version'];
    // What revision 2026-07-28 does not have (a stream by GET, DELETE, a batch) is answered as its SDK answers it.
    if (version === MODERN_REVISION) {
      if (request.method !== 'POST') await reply.code(405).header('allow', 'POST').send(rpcError(ERRORS.upstream, 'Method not allowed.'));
      else await reply.code(400).send(rpcError(ERRORS.invalidRequest, 'Bad Request: JSON-RPC batches are not supported by this endpoint'));
      return null;
    }
    // A 2025 request after initialize may name its revision; one the gateway does not speak is refused, as the revision
    // asks (400) and in the 1.x SDK's words and code.
    const unsupported = unsupportedProtocolVersion(version);
    if (unsupported) {
      await reply.code(400).send(unsupported);
      return null;
    }
    const id = request.headers[SESSION_HEADER];
    if (typeof id !== 'string' || id === '') return { session: null, id: null };
    const session = sessionIds.open(id);
    // An id that opens may still name a session its host ended (DELETE, through any replica) or one past its age.
    if (!session || session.connectionGuid !== caller.connectionGuid || (await endedSessions.isOver(session))) {
      await reply.code(404).send(rpcError(ERRORS.sessionNotFound, 'Session not found: initialize a new session.'));
      return null;
    }
    return { session, id };
  };

  /** GET and DELETE act on an existing session: admitted, with a session id that opens. */
  const admitSession = async (request: FastifyRequest<{ Params: { gatewayGuid: string } }>, reply: FastifyReply) => {
    const caller = await admit(request, reply);
    if (!caller) return null;
    const found = await sessionOf(request, reply, caller);
    if (!found) return null;
    if (!found.session) {
      await reply.code(400).send(rpcError(ERRORS.invalidRequest, `${request.method} needs the session id from initialize (Mcp-Session-Id).`));
      return null;
    }
    return { caller, session: found.session, id: found.id!, catalog: await catalogs.forCaller(caller) };
  };

  const path = '/gateways/:gatewayGuid/mcp';
  const maxRequestBytes = services.config.gateway.maxRequestBytes;
  /**
   * A host speaks JSON-RPC: every failure is answered in it, with the HTTP status that fits. Only a body that
   * cannot be read is a parse error (-32700); anything else is the gateway's failure (-32603), a 503 while a store
   * cannot be reached (try again shortly) and a 500 otherwise, never with its internals.
   */
  const errorHandler = (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const e = err as { code?: string; statusCode?: number };
    if (reply.raw.headersSent) return void reply.raw.end();
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return reply.code(413).send(rpcError(ERRORS.invalidRequest, `The message exceeds the limit of ${maxRequestBytes} bytes.`));
    const unreadable = unreadableBody(err);
    // A body that could not be read because it was declared as something else: the declaration is what is wrong.
    const wrongType = unreadable ? bodyTypeProblem(request.headers) : null;
    if (wrongType) return reply.code(415).send(rpcError(ERRORS.invalidRequest, wrongType));
    if (unreadable) return reply.code(unreadable.status).send(rpcError(ERRORS.parse, `The body is not a valid JSON-RPC message: ${unreadable.reason}.`));
    if (isStoreUnreachable(err)) {
      request.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'gateway request failed: a store cannot be reached');
      return reply
        .code(503)
        .header('retry-after', String(STORE_RETRY_AFTER_SECONDS))
        .send(rpcError(ERRORS.internal, 'The gateway cannot reach its configuration store: try again shortly.'));
    }
    request.log.error({ err }, 'gateway request failed');
    return reply.code(500).send(rpcError(ERRORS.internal, 'The gateway could not serve this request.'));
  };
  const routeOptions = { ...GATEWAY_ROUTE_OPTIONS, errorHandler };
  const postOptions = { ...routeOptions, bodyLimit: maxRequestBytes };
  app.post<{ Params: { gatewayGuid: string } }>(path, postOptions, async (request, reply) => {
    const caller = await admit(request, reply);
    if (!caller) return reply;
    const wrongType = bodyTypeProblem(request.headers);
    if (wrongType) return reply.code(415).send(rpcError(ERRORS.invalidRequest, wrongType));
    const body = request.body as unknown;
    if (Array.isArray(body)) return serveBatch(request, reply, caller, body);
    const invalid = envelopeProblem(body);
    if (invalid) return reply.code(400).send(rpcError(ERRORS.invalidRequest, invalid));
    const message = body as JSONRPCMessage;
    if (isModernMessage(body, request.headers['mcp-protocol-version'])) return serveModern(request, reply, caller);
    const isInitialize = (message as { method?: string }).method === 'initialize';
    const found = isInitialize ? { session: null, id: null } : await sessionOf(request, reply, caller);
    if (!found) return reply;
    const catalog = await catalogs.forCaller(caller);
    const trace = hostTraceContext(header(request, 'traceparent'), header(request, 'tracestate'), request.body);
    const abort = new AbortController();
    // Only a host without a session that goes away before its answer is complete cancels anything (an abort is not
    // free: it builds an error and runs listeners). A host with a session can resume its stream (GET, Last-Event-ID):
    // its call goes on, as the transport asks (a disconnection is not a cancellation).
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished && !found.session) abort.abort();
    });
    const requestBytes = Number(request.headers['content-length'] ?? 0) || Buffer.byteLength(JSON.stringify(body));
    const record = new CallRecord(services, caller, trace, message, requestBytes, request.headers, found.session);
    const answer = await proxy.handle({ caller, catalog, session: found.session, trace, signal: abort.signal, record }, message);
    return render(
      reply,
      answer,
      found.id,
      (message as { id?: unknown }).id,
      acceptsJson(request.headers.accept),
      found.session,
      acceptsEventStream(request.headers.accept),
    );
  });

  /**
   * A JSON-RPC batch, which only a host in a 2025-03-26 session may send (batch.ts): each message counts against the
   * rate limits and is served as if it came alone (a host in a session does not cancel by disconnecting).
   */
  const serveBatch = async (request: FastifyRequest<{ Params: { gatewayGuid: string } }>, reply: FastifyReply, caller: GatewayCaller, batch: unknown[]) => {
    const found = await sessionOf(request, reply, caller);
    if (!found) return reply;
    const problem = batchProblem(batch, found.session);
    if (problem) return reply.code(400).send(rpcError(ERRORS.invalidRequest, problem));
    const session = found.session!;
    for (let counted = 1; counted < batch.length; counted++) if (!(await withinRateLimits(caller, reply))) return reply;
    const catalog = await catalogs.forCaller(caller);
    const trace = hostTraceContext(header(request, 'traceparent'), header(request, 'tracestate'), request.body);
    const signal = new AbortController().signal;
    const handle = (message: JSONRPCMessage) => {
      const record = new CallRecord(services, caller, trace, message, Buffer.byteLength(JSON.stringify(message)), request.headers, session);
      return proxy.handle({ caller, catalog, session, trace, signal, record }, message);
    };
    return replyToBatch(reply, batch, handle, {
      sessionId: found.id!,
      jsonAccepted: acceptsJson(request.headers.accept),
      openStream: () => replay.open(session.id),
      sessionExpired: () => sessionExpiredUpstream(reply, session),
    });
  };

  /** A 2026-07-28 request: the SDK's handler serves the revision, the same proxy serves the request. */
  const modern = createModernHostHandler(proxy, { services, catalogs, fetch: upstreams.fetch });
  app.addHook('onClose', () => modern.close());
  const serveModern = async (request: FastifyRequest, reply: FastifyReply, caller: GatewayCaller) => {
    const catalog = await catalogs.forCaller(caller);
    const trace = hostTraceContext(header(request, 'traceparent'), header(request, 'tracestate'), request.body);
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const requestBytes = Number(request.headers['content-length'] ?? 0) || Buffer.byteLength(JSON.stringify(request.body));
    const modernHost: ModernHostRequest = {
      caller,
      catalog,
      trace,
      signal: abort.signal,
      record(message) {
        const record = new CallRecord(services, caller, trace, message, requestBytes, request.headers, null);
        record.protocolVersion = MODERN_REVISION;
        return record;
      },
    };
    // Refused before the SDK's schema would answer it with a dump of its issues, and logged like any refusal.
    const malformed = malformedRequestParams(request.body, MODERN_REVISION);
    if (malformed) {
      const record = modernHost.record(request.body as JSONRPCMessage);
      const name = (request.body as { params?: { name?: unknown } }).params?.name;
      if (typeof name === 'string') record.toolName = name.slice(0, 500);
      settle(record, { kind: 'answer', message: malformed as JSONRPCMessage });
      return sendJson(reply, 200, null, malformed);
    }
    // The host's Mcp-Param-* headers, checked as a server of the revision checks them, before the SDK's handler (whose errors go out as HTTP 200).
    const call = request.body as { id?: RequestId; method?: string; params?: { name?: unknown; arguments?: unknown } };
    const problem =
      call.method === 'tools/call' && call.id !== undefined && typeof call.params === 'object' && call.params !== null
        ? proxy.paramSchemas.hostMismatch(catalog, call.params, paramHeadersOf(request))
        : null;
    if (problem) {
      const refusal = paramHeaderRefusal(call.id!, problem);
      const record = modernHost.record(request.body as JSONRPCMessage);
      if (typeof call.params?.name === 'string') record.toolName = call.params.name.slice(0, 500);
      settle(record, { kind: 'answer', message: refusal });
      return sendJson(reply, 400, null, refusal);
    }
    const direct = directRequest(request.body, request.headers);
    if (direct) return serveDirect(reply, modernHost, direct);
    const listen = request.body as { method?: unknown; id?: RequestId };
    // A listen stream stays open as a GET stream does, and takes one of the same slots.
    const listens = listen.method === 'subscriptions/listen';
    if (listens && !(await holdStream(caller, reply))) return reply;
    const response = await modern.fetch(toWebRequest(request), {
      parsedBody: request.body,
      authInfo: { token: 'verified', clientId: caller.connectionGuid, scopes: [], extra: { modernHost } },
    });
    // The revision asks a server ending a listen stream to say so: notifications/cancelled naming the listen request.
    if (listens)
      endWhenAccessEnds(request, caller, reply.raw, (reason) =>
        sseMessage({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: listen.id!, reason } } as JSONRPCMessage),
      );
    return sendWebResponse(reply, response);
  };

  /**
   * A request on the direct path (modern-direct.ts): a JSON answer, or an event stream from the first message the
   * upstream sends the host before it (progress, log messages), as the SDK's handler answers (its 'auto' mode).
   */
  const serveDirect = async (reply: FastifyReply, host: ModernHostRequest, direct: DirectRequest): Promise<FastifyReply> => {
    let keepAlive: NodeJS.Timeout | undefined;
    const answer = await modern.serveDirect(host, direct, async (notification) => {
      if (reply.raw.destroyed) return;
      if (!reply.sent) {
        reply.hijack();
        reply.raw.writeHead(200, DIRECT_SSE_HEADERS);
        keepAlive = setInterval(() => reply.raw.destroyed || reply.raw.write(': keepalive\n\n'), DIRECT_SSE_KEEP_ALIVE_MS);
      }
      reply.raw.write(sseMessage(notification));
    });
    if (!reply.sent) return sendJson(reply, directAnswerStatus(answer), null, answer);
    clearInterval(keepAlive);
    if (!reply.raw.destroyed) reply.raw.end(sseMessage(answer));
    return reply;
  };

  registerLegacyGatewayRoutes(app, services, { admit, holdStream, endWhenAccessEnds, rpcError, proxy, catalogs, fetch: upstreams.fetch, postOptions });

  app.get<{ Params: { gatewayGuid: string } }>(path, routeOptions, async (request, reply) => {
    const found = await admitSession(request, reply);
    if (!found || !(await holdStream(found.caller, reply))) return reply;
    const lastEventId = header(request, 'last-event-id');
    // An id of the session's GET stream is that stream's to resume; any other, a POST stream's.
    const resumed = lastEventId && !hostEvents.holds(found.session.id, lastEventId) ? replay.resume(found.session.id, lastEventId) : null;
    if (resumed) {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', [SESSION_HEADER]: found.id });
      for await (const event of resumed) if (!reply.raw.destroyed) reply.raw.write(event);
      reply.raw.end();
      return reply;
    }
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', [SESSION_HEADER]: found.id });
    reply.raw.flushHeaders();
    endWhenAccessEnds(request, found.caller, reply.raw);
    const following = {
      services,
      catalogs,
      caller: found.caller,
      catalog: found.catalog,
      session: found.session,
      subscriptions: proxy.subscriptions,
      tasks: proxy.tasks,
      fetch: upstreams.fetch,
    };
    await hostEvents.serve(following, reply.raw, lastEventId);
  });

  app.delete<{ Params: { gatewayGuid: string } }>(path, routeOptions, async (request, reply) => {
    const found = await admitSession(request, reply);
    if (!found) return reply;
    // Ended for every replica before anything else: from here on the id is a 404 wherever it is presented.
    await endedSessions.end(found.session);
    hostEvents.end(found.session.id);
    await proxy.endSession(found.session, found.catalog, hostTraceContext(header(request, 'traceparent'), undefined, undefined));
    return reply.code(200).send();
  });

  /** An event stream that ends at once, with nothing in it. */
  function endStream(reply: FastifyReply, sessionId: string | null): FastifyReply {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...(sessionId ? { [SESSION_HEADER]: sessionId } : {}) });
    reply.raw.end();
    return reply;
  }

  async function render(
    reply: FastifyReply,
    answer: HostReply,
    sessionId: string | null,
    requestId: unknown,
    jsonAccepted: boolean,
    session: GatewaySession | null = null,
    streamAccepted = false,
  ): Promise<FastifyReply> {
    if (answer.kind === 'accepted') return reply.code(202).send();
    if (answer.kind === 'session-expired') return sessionExpiredUpstream(reply, session);
    // A cancelled request is not answered where the host takes an event stream: one that ends without the answer.
    if (answer.kind === 'json' && streamAccepted && isCancelledAnswer(answer.message)) return endStream(reply, sessionId);
    if (answer.kind === 'json') {
      return sendJson(reply, answer.status ?? 200, answer.newSession ? sessionIds.seal(answer.newSession) : sessionId, answer.message);
    }
    const messages = answer.messages[Symbol.asyncIterator]();
    let next = await messages.next();
    // An upstream stream whose first message is already the answer (the common tool call)
    // goes to the host as plain JSON, which the transport allows for any request and a
    // host parses for less than an event stream. (Its row is written already, and the
    // stream ends with its answer: call-outcome.ts.)
    if (jsonAccepted && !next.done && isAnswerTo(requestId, next.value) && !(streamAccepted && isCancelledAnswer(next.value))) {
      sendJson(reply, 200, sessionId, next.value);
      while (!(await messages.next()).done);
      return reply;
    }
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...(sessionId ? { [SESSION_HEADER]: sessionId } : {}) });
    // In a session, every event has an id and is kept, so a host whose connection drops can resume (GET with Last-Event-ID).
    const kept = session ? replay.open(session.id) : null;
    for (; !next.done; next = await messages.next()) {
      const message = next.value;
      const answers = isAnswerTo(requestId, message);
      if (answers && isCancelledAnswer(message)) {
        if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.end();
        continue;
      }
      // Kept for a resumption even when the host's connection is gone (it may come back with Last-Event-ID).
      const text = kept ? kept.event(message) : sseMessage(message);
      if (reply.raw.destroyed || reply.raw.writableEnded) continue;
      // The answer to the host's request ends the response (headers, event and end in one write).
      if (answers) reply.raw.end(text);
      else reply.raw.write(text);
    }
    kept?.end();
    if (!reply.raw.writableEnded) reply.raw.end();
    return reply;
  }
}

/** One JSON-RPC message as the whole answer, with the session header when there is a session. */
function sendJson(reply: FastifyReply, status: number, sessionId: string | null, message: unknown): FastifyReply {
  if (sessionId) reply.header(SESSION_HEADER, sessionId);
  return reply.code(status).type('application/json').send(JSON.stringify(message));
}

/** A body fastify or the JSON parser could not read (its status and why), or null for any other failure. */
function unreadableBody(err: unknown): { status: number; reason: string } | null {
  if (err instanceof AppError) return err.code === 'validation_failed' ? { status: 400, reason: err.message } : null;
  if (err instanceof SyntaxError) return { status: 400, reason: 'body: is not valid JSON' };
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'string' && e.code.startsWith('FST_ERR_CTP_'))
    return {
      status: typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : 400,
      reason: 'body: cannot be read as JSON',
    };
  return null;
}

/**
 * A request's headers as a tool's marks are checked against them (only Mcp-Param-* names are asked), read where
 * they are: most tools have no marks, so a call makes no copy of its headers for them.
 */
function paramHeadersOf(request: FastifyRequest): ParamHeaderSource {
  // Method shorthand: an arrow here would be wrapped in a naming helper each call (docs/decisions.md, "No named closure").
  return {
    get(name) {
      const value = request.headers[name.toLowerCase()];
      return typeof value === 'string' ? value : null;
    },
  };
}
