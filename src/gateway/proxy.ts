import { randomBytes } from 'node:crypto';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../core/errors.js';
import { OAuthRefreshError } from '../core/servers/oauth-refresh.js';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import { exposeItems, LIST_CAPABILITY, LIST_KEY, nameItems, resolveExposedName, routeForUri, type ExposedItems, type ListMethod } from './aggregate.js';
import type { CallRecord } from './call-record.js';
import type { Catalog, Catalogs, Route, RouteCredential } from './catalog.js';
import { malformedRequestParams } from '../mcp/request-params.js';
import { redactSecretValues } from '../core/redaction.js';
import { withoutEchoedSecretsIn } from './echoed-secrets.js';
import { cancelledTarget, fromUpstream, isAnswerTo, unrelayId } from './relay.js';
import type { GatewaySession } from './session-id.js';
import { upstreamTraceparent, type TraceContext } from './trace-context.js';
import { ResponseTooLargeError, type UpstreamFetch } from './upstream-client.js';
import { deleteUpstreamSession, initializeUpstream, postToUpstream, UpstreamHttpError, type UpstreamReply, type UpstreamRequest } from './upstream-http.js';
import { initializeLegacyUpstream, sendToLegacyUpstream } from './upstream-legacy-sse.js';
import { errorAnswerIn, MODERN_REVISION, toModernUpstream, type HostIdentity } from './modern-upstream.js';
import { isInputRequired } from './bridge-input-requests.js';
import { InputWaiters, inputRounds } from './bridge-input-rounds.js';
import type { UpstreamHealth } from './upstream-health.js';
import { UpstreamSessionPool } from './upstream-session-pool.js';

/** JSON-RPC error codes the gateway answers with. */
export const ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  upstream: -32000,
  rateLimited: -32029,
  sessionNotFound: -32001,
} as const;

/** Everything one host request is served with. */
export interface HostContext {
  caller: GatewayCaller;
  catalog: Catalog;
  /** The host's session (null for a request sent without one). */
  session: GatewaySession | null;
  trace: TraceContext;
  /** Aborted when the host goes away. */
  signal: AbortSignal;
  record: CallRecord;
  /** Set for a 2026-07-28 host (bridge-held-calls.ts); absent for a 2025 host. */
  modern?: ModernHostContext;
}

/** A 2026-07-28 host's request: no session, the host's identity from its envelope. */
export interface ModernHostContext {
  identity: HostIdentity;
  /**
   * The upstream sessions opened for this request alone, while they are open: the
   * host's answers to a 2025 upstream's requests go back into the same session.
   */
  upstreams: Map<string, { sessionId?: string; protocolVersion?: string }>;
}

/** What the host gets back for one POSTed message. */
export type HostReply =
  | { kind: 'accepted' }
  | { kind: 'json'; message: JSONRPCMessage; status?: number; newSession?: GatewaySession }
  | { kind: 'stream'; messages: AsyncIterable<JSONRPCMessage> }
  /** The session names an upstream session that no longer exists: the host must initialize again (HTTP 404). */
  | { kind: 'session-expired' };

/** A failure to be answered as a JSON-RPC error, with what the call log should say. */
export class GatewayCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
    /** What the call log says when it differs from what the host is told (a refusal's reason). */
    readonly logMessage?: string,
  ) {
    super(message);
  }
}

class SessionExpired extends Error {}

const errorResponse = (id: RequestId, code: number, message: string, data?: Record<string, unknown>): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } }) as JSONRPCMessage;

export const GATEWAY_VERSION = '1.0.0';
/** What a gateway offers a host, in every revision: everything a later assignment could bring; lists say what exists now. */
export const GATEWAY_CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  completions: {},
  logging: {},
};
/** Aggregated lists read at most this many pages from each upstream. */
const MAX_PAGES = 20;
/** Who the gateway says the host is to an upstream when the host has no session and no envelope. */
const SESSIONLESS_HOST = { protocolVersion: LATEST_PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: 'gateway-host', version: '0' } };

/**
 * The MCP proxy behind each gateway's connect URL. Transport-free: it takes one
 * JSON-RPC message from the host and says what to answer; the HTTP routes render
 * it. It keeps no state of its own between requests: what a session needs travels
 * in the sealed session id.
 */
export class GatewayProxy {
  /** 2025 hosts' answers to the requests bridged from 2026-07-28 upstreams' input_required results, awaited here. */
  private readonly inputWaiters = new InputWaiters();

  /** 2025 upstream sessions shared by the session-less requests of 2026-07-28 hosts. */
  private readonly sessions = new UpstreamSessionPool();

  constructor(
    private readonly services: Pick<Services, 'config' | 'logger'>,
    private readonly catalogs: Catalogs,
    private readonly health: UpstreamHealth,
    private readonly fetch: UpstreamFetch,
  ) {}

  /** Ends the pooled upstream sessions (the process is closing). */
  close(): void {
    this.sessions.close();
  }

  /** Serves one message the host POSTed. */
  async handle(ctx: HostContext, message: JSONRPCMessage): Promise<HostReply> {
    const m = message as { id?: RequestId; method?: string; params?: Record<string, unknown> };
    if (m.method === undefined) return this.relayHostAnswer(ctx, message);
    if (m.id === undefined) return this.relayNotification(ctx, message);
    const id = m.id;
    try {
      // Refused here, in words, rather than forwarded for an upstream to fail on (or dumped by a schema).
      const malformed = malformedRequestParams(message);
      if (malformed) {
        if (typeof m.params?.name === 'string') ctx.record.toolName = m.params.name.slice(0, 500);
        throw new GatewayCallError(ERRORS.invalidParams, malformed.error.message);
      }
      switch (m.method) {
        case 'initialize':
          return await this.initialize(ctx, id, m.params ?? {});
        case 'ping':
          return this.answer(ctx, { jsonrpc: '2.0', id, result: {} });
        case 'tools/list':
        case 'prompts/list':
        case 'resources/list':
        case 'resources/templates/list':
          return await this.list(ctx, id, m.method);
        case 'tools/call':
        case 'prompts/get':
          return await this.callNamed(ctx, message, m.method, m.params ?? {});
        case 'resources/read':
        case 'resources/subscribe':
        case 'resources/unsubscribe':
          return await this.callByUri(ctx, message, String(m.params!.uri));
        case 'completion/complete':
          return await this.complete(ctx, message, m.params ?? {});
        case 'logging/setLevel':
          await this.broadcast(ctx, message, true);
          return this.answer(ctx, { jsonrpc: '2.0', id, result: {} });
        default:
          throw new GatewayCallError(ERRORS.methodNotFound, `Method not found: ${m.method}`);
      }
    } catch (err) {
      if (err instanceof SessionExpired) {
        ctx.record.finish(null, 0, 'the upstream session expired; the host must initialize again');
        return { kind: 'session-expired' };
      }
      const e = err instanceof GatewayCallError ? err : new GatewayCallError(ERRORS.internal, 'The gateway could not serve this request.');
      if (!(err instanceof GatewayCallError))
        this.services.logger.error({ err: err instanceof Error ? err.message : String(err), method: m.method }, 'gateway request failed');
      return this.answer(ctx, errorResponse(id, e.code, e.message, e.data), { failure: e.logMessage });
    }
  }

  private answer(ctx: HostContext, message: JSONRPCMessage, extra: { newSession?: GatewaySession; failure?: string | undefined } = {}): HostReply {
    const { failure, ...rest } = extra;
    ctx.record.finish(message, 0, failure);
    return { kind: 'json', message, ...rest };
  }

  // --- initialize -----------------------------------------------------------------

  private async initialize(ctx: HostContext, id: RequestId, params: Record<string, unknown>): Promise<HostReply> {
    const requested = typeof params.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION;
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
    const clientCapabilities = (params.capabilities ?? {}) as Record<string, unknown>;
    const clientInfo = (params.clientInfo ?? { name: 'unknown', version: '0' }) as GatewaySession['clientInfo'];
    const session: GatewaySession = {
      id: randomBytes(8).toString('hex'),
      connectionGuid: ctx.caller.connectionGuid,
      protocolVersion,
      clientCapabilities,
      clientInfo,
      upstreams: {},
      createdAt: Date.now(),
    };
    const opened = await Promise.all(
      // A 2026-07-28 upstream has no session to open: each request carries its envelope.
      ctx.catalog.routes
        .filter((route) => route.features?.protocolVersion !== MODERN_REVISION)
        .map(async (route) => {
          try {
            return { route, init: await this.openUpstream(ctx, route, session) };
          } catch (err) {
            this.services.logger.warn({ inboundServerGuid: route.serverGuid, reason: this.describe(route, err) }, 'an upstream could not be initialized');
            return { route, init: null };
          }
        }),
    );
    const instructions: string[] = [];
    for (const { route, init } of opened) {
      if (!init) continue;
      session.upstreams[route.assignmentGuid] = {
        ...(init.sessionId ? { sessionId: init.sessionId } : {}),
        ...(init.protocolVersion ? { protocolVersion: init.protocolVersion } : {}),
      };
      if (init.instructions) instructions.push(`## ${route.slug}\n${init.instructions}`);
    }
    const result = {
      protocolVersion,
      capabilities: GATEWAY_CAPABILITIES,
      serverInfo: { name: ctx.caller.gatewayName, version: GATEWAY_VERSION },
      ...(instructions.length
        ? { instructions: `Tools, prompts and resources of several servers, each named <server>__<name>.\n\n${instructions.join('\n\n')}` }
        : {}),
    };
    return this.answer(ctx, { jsonrpc: '2.0', id, result } as JSONRPCMessage, { newSession: session });
  }

  /** Runs initialize (and notifications/initialized) against one upstream for the host's session. */
  private async openUpstream(
    ctx: HostContext,
    route: Route,
    session: Pick<GatewaySession, 'protocolVersion' | 'clientCapabilities' | 'clientInfo'>,
  ): Promise<{ sessionId: string | null; protocolVersion: string | null; instructions: string | null }> {
    const credential = await this.credential(route);
    if (route.transport === 'sse') {
      // A legacy session ends with its stream: nothing to keep, each exchange opens its own.
      const result = await initializeLegacyUpstream(this.request(ctx, route, credential, undefined, undefined), session);
      return {
        sessionId: null,
        protocolVersion: null,
        instructions: typeof result.instructions === 'string' ? redactSecretValues(result.instructions, credential.secrets) : null,
      };
    }
    const opened = await initializeUpstream(this.request(ctx, route, credential, undefined, undefined), {
      protocolVersion: session.protocolVersion,
      capabilities: session.clientCapabilities,
      clientInfo: session.clientInfo,
    });
    const { instructions } = opened.result;
    return {
      sessionId: opened.sessionId,
      protocolVersion: opened.protocolVersion,
      // Instructions reach the host: whatever of the credential an upstream put in them is not relayed.
      instructions: typeof instructions === 'string' ? redactSecretValues(instructions, credential.secrets) : null,
    };
  }

  // --- lists ----------------------------------------------------------------------

  private async list(ctx: HostContext, id: RequestId, method: ListMethod): Promise<HostReply> {
    const key = LIST_KEY[method];
    const capability = LIST_CAPABILITY[method];
    const perRoute = await Promise.all(
      ctx.catalog.routes
        .filter((r) => !r.features || r.features.capabilities[capability] !== undefined)
        .map(async (route) => {
          try {
            const items: Record<string, unknown>[] = [];
            let cursor: string | undefined;
            for (let page = 0; page < MAX_PAGES; page++) {
              const request = { jsonrpc: '2.0', id: `list-${page}`, method, params: cursor ? { cursor } : {} } as JSONRPCMessage;
              const response = await this.exchangeForResult(ctx, route, request);
              items.push(...((response[key] as Record<string, unknown>[] | undefined) ?? []));
              cursor = typeof response.nextCursor === 'string' ? response.nextCursor : undefined;
              if (!cursor) break;
            }
            return exposeItems(route, key, items);
          } catch (err) {
            if (err instanceof SessionExpired) throw err;
            // One failing upstream must not hide the others: its items are left out.
            this.services.logger.warn({ inboundServerGuid: route.serverGuid, method, reason: this.describe(route, err) }, 'an upstream could not be listed');
            return { route, items: [] } satisfies ExposedItems;
          }
        }),
    );
    return this.answer(ctx, { jsonrpc: '2.0', id, result: { [key]: nameItems(ctx.catalog.naming, perRoute) } } as JSONRPCMessage);
  }

  /** Sends a request to one upstream and returns its result (throws GatewayCallError on an error answer). */
  private async exchangeForResult(ctx: HostContext, route: Route, request: JSONRPCMessage): Promise<Record<string, unknown>> {
    const reply = await this.send(ctx, route, request);
    let final: Record<string, any> | null = null;
    for await (const msg of reply.messages) if ('result' in msg || 'error' in msg) final = msg as Record<string, any>;
    if (!final) throw new GatewayCallError(ERRORS.upstream, `Server ${route.slug} gave no answer.`);
    if (final.error) throw new GatewayCallError(final.error.code ?? ERRORS.upstream, String(final.error.message ?? 'error'));
    return final.result as Record<string, unknown>;
  }

  // --- routed calls ---------------------------------------------------------------

  private async callNamed(
    ctx: HostContext,
    message: JSONRPCMessage,
    method: 'tools/call' | 'prompts/get',
    params: Record<string, unknown>,
  ): Promise<HostReply> {
    const qualified = typeof params.name === 'string' ? params.name : '';
    const kind = method === 'tools/call' ? 'Tool' : 'Prompt';
    const listKey = method === 'tools/call' ? 'tools' : 'prompts';
    const resolved = resolveExposedName(ctx.catalog, listKey, qualified);
    if ('refused' in resolved) {
      // Refused like an unknown name; the call log keeps the reason.
      ctx.record.toolName = qualified.slice(0, 500);
      throw new GatewayCallError(ERRORS.invalidParams, `${kind} ${qualified} not found on this gateway.`, undefined, resolved.refused);
    }
    if (!('route' in resolved)) {
      const why = resolved.slug ? ctx.catalog.unavailable.get(resolved.slug) : undefined;
      throw new GatewayCallError(
        ERRORS.invalidParams,
        why ? `${kind} ${qualified} is not available: ${why}.` : `${kind} ${qualified} not found on this gateway.`,
      );
    }
    ctx.record.toolName = resolved.name;
    const upstreamMessage = { ...message, params: { ...params, name: resolved.name } } as JSONRPCMessage;
    return this.relay(ctx, resolved.route, upstreamMessage);
  }

  private async callByUri(ctx: HostContext, message: JSONRPCMessage, uri: string): Promise<HostReply> {
    const route = routeForUri(ctx.catalog.routes, uri);
    if (!route) throw new GatewayCallError(ERRORS.invalidParams, `Resource ${uri} not found on this gateway.`);
    ctx.record.toolName = uri.slice(0, 500);
    return this.relay(ctx, route, message);
  }

  private async complete(ctx: HostContext, message: JSONRPCMessage, params: Record<string, unknown>): Promise<HostReply> {
    const ref = (params.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/resource') return this.callByUri(ctx, message, String(ref.uri ?? ''));
    const resolved = resolveExposedName(ctx.catalog, 'prompts', String(ref.name ?? ''));
    if (!('route' in resolved)) throw new GatewayCallError(ERRORS.invalidParams, `Prompt ${String(ref.name)} not found on this gateway.`);
    return this.relay(ctx, resolved.route, { ...message, params: { ...params, ref: { ...ref, name: resolved.name } } } as JSONRPCMessage);
  }

  /** Sends the host's request to one upstream and relays what comes back: JSON as JSON, a stream as a stream. */
  private async relay(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<HostReply> {
    ctx.record.inboundServerGuid = route.serverGuid;
    const reply = await this.send(ctx, route, message);
    if (!reply.streamed) {
      let final: JSONRPCMessage | null = null;
      try {
        for await (const msg of reply.messages) final = msg;
      } catch (err) {
        throw this.failed(ctx, route, message, err);
      }
      if (!final) throw this.failed(ctx, route, message, new Error('the upstream gave no answer'));
      if (this.asksHost(ctx, final)) return { kind: 'stream', messages: this.bridgeInput(ctx, route, message, final, 0) };
      this.observe(ctx, route, message, final);
      return this.answer(ctx, final);
    }
    return { kind: 'stream', messages: this.relayStream(ctx, route, message, reply.messages) };
  }

  /** Whether an upstream's answer is an input_required result the gateway turns into requests to a 2025 host. */
  private asksHost(ctx: HostContext, final: JSONRPCMessage): boolean {
    return !ctx.modern && isInputRequired((final as { result?: unknown }).result);
  }

  /**
   * A 2026-07-28 upstream asked for input (bridge-input-rounds.ts): its requests go to
   * the 2025 host on this call's stream, and its final answer ends the stream and
   * the call's row, as any streamed answer does.
   */
  private async *bridgeInput(
    ctx: HostContext,
    route: Route,
    message: JSONRPCMessage,
    first: JSONRPCMessage,
    relayedBefore: number,
  ): AsyncGenerator<JSONRPCMessage> {
    const hostId = (message as { id: RequestId }).id;
    let relayed = relayedBefore;
    let final: JSONRPCMessage;
    try {
      const rounds = inputRounds(
        {
          slug: route.slug,
          serverGuid: route.serverGuid,
          connectionGuid: ctx.caller.connectionGuid,
          hostCapabilities: ctx.session?.clientCapabilities ?? null,
          signal: ctx.signal,
          timeoutMs: this.services.config.gateway.upstreamTimeoutMs,
          waiters: this.inputWaiters,
          retry: async (retried) => (await this.send(ctx, route, retried)).messages,
          relayed: (notification) => fromUpstream(route.assignmentGuid, notification),
        },
        message,
        (first as { result: Record<string, unknown> }).result,
      );
      for (;;) {
        const step = await rounds.next();
        if (step.done) {
          final =
            'final' in step.value ? step.value.final : errorResponse(hostId, ERRORS.upstream, step.value.refused, { inboundServerGuid: route.serverGuid });
          break;
        }
        relayed += JSON.stringify(step.value).length;
        yield step.value;
      }
    } catch (err) {
      const e = this.failed(ctx, route, message, err);
      final = errorResponse(hostId, e.code, e.message, e.data);
    }
    try {
      yield final;
    } finally {
      this.observe(ctx, route, message, final);
      ctx.record.finish(final, relayed);
    }
  }

  /**
   * Relays an upstream's event stream to the host. The answer is the last message
   * the host gets (the transport ends the stream with it, so the host's response
   * can end at once); the call log row is written right after it has been handed
   * on. The upstream's stream is still read to its end, so that its connection can
   * be reused.
   */
  private async *relayStream(ctx: HostContext, route: Route, message: JSONRPCMessage, messages: AsyncIterable<JSONRPCMessage>): AsyncGenerator<JSONRPCMessage> {
    const hostId = (message as { id: RequestId }).id;
    let relayed = 0;
    let final: JSONRPCMessage | null = null;
    try {
      for await (const msg of messages) {
        if (final) continue;
        if (isAnswerTo(hostId, msg)) {
          final = msg;
          if (this.asksHost(ctx, final)) {
            yield* this.bridgeInput(ctx, route, message, final, relayed);
            continue;
          }
          try {
            yield final;
          } finally {
            // After the answer is on its way to the host, yet before the host can have read it:
            // the consumer resumes this generator in the same turn of the event loop.
            this.observe(ctx, route, message, final);
            ctx.record.finish(final, relayed);
          }
          continue;
        }
        const out = fromUpstream(route.assignmentGuid, msg);
        relayed += JSON.stringify(out).length;
        yield out;
      }
      if (!final) throw new Error('the upstream closed the stream without an answer');
    } catch (err) {
      if (final) return ctx.record.finish(final, relayed);
      const e = this.failed(ctx, route, message, err);
      const answer = errorResponse(hostId, e.code, e.message, e.data);
      ctx.record.finish(answer, relayed);
      yield answer;
    }
  }

  /** Notes an upstream's answer for alerting (a JSON-RPC internal error counts as a failure). */
  private observe(ctx: HostContext, route: Route, request: JSONRPCMessage, final: JSONRPCMessage): void {
    const error = (final as { error?: { code?: number; message?: string } }).error;
    if (error && error.code === ERRORS.internal) {
      this.health.failed(ctx.caller, route, {
        reason: String(error.message ?? ''),
        method: (request as { method: string }).method,
        secrets: ctx.record.secrets,
        headerNames: ctx.record.headerNames,
        traceId: ctx.trace.traceId,
      });
    } else this.health.succeeded(route);
  }

  // --- messages that are not requests ---------------------------------------------

  /** The host answers a request an upstream sent (sampling, elicitation, roots): back to that upstream. */
  private async relayHostAnswer(ctx: HostContext, message: JSONRPCMessage): Promise<HostReply> {
    if (InputWaiters.answers(message)) {
      // An answer to a request bridged from an input_required result: the call waiting for it is in this process, or nowhere.
      const delivered = this.inputWaiters.deliver(message, ctx.caller.connectionGuid);
      ctx.record.inboundServerGuid = delivered?.serverGuid ?? null;
      ctx.record.finish(null, 0, delivered ? undefined : 'no call of this gateway process waits for this answer (it ended, or it waits in another replica)');
      return { kind: 'accepted' };
    }
    const target = unrelayId((message as { id?: unknown }).id);
    const route = target ? ctx.catalog.byAssignment.get(target.assignmentGuid) : undefined;
    if (!target || !route) return { kind: 'accepted' };
    ctx.record.inboundServerGuid = route.serverGuid;
    try {
      await this.answerUpstream(ctx, message);
      ctx.record.finish(null, 0);
    } catch (err) {
      if (err instanceof SessionExpired) return { kind: 'session-expired' };
      ctx.record.finish(null, 0, this.describe(route, err));
    }
    return { kind: 'accepted' };
  }

  /**
   * Sends the host's answer (a JSON-RPC response with a relayed id) to the upstream
   * request it answers, in the upstream session of the host's session or request;
   * does nothing for an id that names no upstream of the caller.
   */
  async answerUpstream(ctx: HostContext, message: JSONRPCMessage): Promise<void> {
    const target = unrelayId((message as { id?: unknown }).id);
    const route = target ? ctx.catalog.byAssignment.get(target.assignmentGuid) : undefined;
    if (!target || !route) return;
    const reply = await this.send(ctx, route, { ...message, id: target.id } as JSONRPCMessage);
    for await (const _ of reply.messages) void _;
  }

  private async relayNotification(ctx: HostContext, message: JSONRPCMessage): Promise<HostReply> {
    const method = (message as { method: string }).method;
    // The gateway already told each upstream it was initialized, when it opened it.
    if (method === 'notifications/initialized') return { kind: 'accepted' };
    const cancelled = cancelledTarget(message);
    if (cancelled) {
      const route = ctx.catalog.byAssignment.get(cancelled.assignmentGuid);
      if (route) await this.send(ctx, route, cancelled.message).catch(() => undefined);
      return { kind: 'accepted' };
    }
    // Cancellations of the host's own requests, roots/list_changed, progress: every upstream
    // of the session may care, and an upstream ignores what is not its own.
    await this.broadcast(ctx, message, false);
    return { kind: 'accepted' };
  }

  private async broadcast(ctx: HostContext, message: JSONRPCMessage, wait: boolean): Promise<void> {
    const routes = ctx.session ? ctx.catalog.routes.filter((r) => ctx.session!.upstreams[r.assignmentGuid]) : [];
    const all = Promise.allSettled(
      routes.map(async (route) => {
        const reply = await this.send(ctx, route, { ...message } as JSONRPCMessage);
        for await (const _ of reply.messages) void _;
      }),
    );
    if (wait) await all;
  }

  // --- one upstream exchange ------------------------------------------------------

  private async credential(route: Route): Promise<RouteCredential> {
    try {
      return await this.catalogs.credential(route);
    } catch (err) {
      if (err instanceof OAuthRefreshError) throw new GatewayCallError(ERRORS.upstream, `Server ${route.slug}: ${err.message}`);
      throw err;
    }
  }

  /** One request to a 2026-07-28 upstream: no session, no initialize; the envelope and routing headers instead. */
  private async sendModern(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamReply> {
    const host = ctx.session ?? ctx.modern?.identity ?? { clientInfo: { name: ctx.caller.gatewayName, version: GATEWAY_VERSION }, clientCapabilities: {} };
    const modern = toModernUpstream(message, host);
    try {
      return await postToUpstream({ ...this.request(ctx, route, credential, undefined, MODERN_REVISION), routingHeaders: modern.headers }, modern.message);
    } catch (err) {
      const answer = err instanceof UpstreamHttpError ? errorAnswerIn(err.status, err.body, message) : null;
      if (answer)
        return {
          status: 200,
          sessionId: null,
          streamed: false,
          messages: (async function* () {
            yield answer;
          })(),
        };
      throw this.failed(ctx, route, message, err);
    }
  }

  private request(
    ctx: HostContext,
    route: Route,
    credential: RouteCredential,
    sessionId: string | undefined,
    protocolVersion: string | undefined,
  ): UpstreamRequest {
    const { upstreamTimeoutMs, maxResponseBytes } = this.services.config.gateway;
    return {
      url: route.url,
      credentialHeaders: credential.headers,
      sessionId,
      protocolVersion,
      traceparent: upstreamTraceparent(ctx.trace),
      tracestate: ctx.trace.tracestate,
      signal: ctx.signal,
      // A hung upstream is cut off: nothing waits for it longer than the timeout.
      timeoutMs: upstreamTimeoutMs,
      maxResponseBytes,
      fetch: this.fetch,
    };
  }

  /**
   * Sends one message to an upstream within the host's session: the upstream
   * session opened at initialize, or, for an upstream the session does not know
   * (assigned later, or a request sent without a session), one opened for this
   * request and closed after it.
   */
  private async send(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<UpstreamReply> {
    const credential = await this.credential(route);
    ctx.record.secrets.push(...credential.secrets);
    ctx.record.headerNames.push(...credential.headerNames);
    const reply = await this.exchange(ctx, route, credential, message);
    // Every message of every upstream transport passes here on its way to the host (answers, streams, lists, errors):
    // a credential the upstream echoes goes no further.
    return credential.secrets.length > 0 ? { ...reply, messages: withoutEchoedSecretsIn(reply.messages, credential.secrets) } : reply;
  }

  /** One exchange with the upstream in the transport and revision it speaks. */
  private async exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamReply> {
    if (route.transport === 'sse') return this.sendLegacy(ctx, route, credential, message);
    if (route.features?.protocolVersion === MODERN_REVISION) return this.sendModern(ctx, route, credential, message);
    if (ctx.modern && !ctx.modern.upstreams.has(route.assignmentGuid)) return this.sendPooled(ctx, route, credential, message);
    const held = ctx.modern?.upstreams;
    let upstream = ctx.session?.upstreams[route.assignmentGuid] ?? held?.get(route.assignmentGuid);
    let transient = false;
    try {
      if (!upstream) {
        const opened = await this.openUpstream(ctx, route, this.hostOf(ctx));
        upstream = {
          ...(opened.sessionId ? { sessionId: opened.sessionId } : {}),
          ...(opened.protocolVersion ? { protocolVersion: opened.protocolVersion } : {}),
        };
        transient = Boolean(opened.sessionId);
        if (transient) held?.set(route.assignmentGuid, upstream);
      }
      const req = this.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion);
      const reply = await postToUpstream(req, message).catch((err: unknown) => {
        if (transient) this.closeTransient(ctx, route, credential, upstream!);
        throw err;
      });
      if (!transient) return reply;
      const opened = upstream;
      return {
        ...reply,
        messages: (async function* (proxy: GatewayProxy) {
          try {
            yield* reply.messages;
          } finally {
            proxy.closeTransient(ctx, route, credential, opened);
          }
        })(this),
      };
    } catch (err) {
      if (err instanceof UpstreamHttpError && err.status === 404 && upstream?.sessionId && !transient) throw new SessionExpired();
      if (err instanceof GatewayCallError) throw err;
      throw this.failed(ctx, route, message, err);
    }
  }

  /**
   * A 2026-07-28 host's exchange with a 2025 upstream, on the session its connection
   * shares with its other requests of the same host identity (upstream-session-pool.ts):
   * one exchange per call instead of four. The session stays the request's while the
   * request lasts (a bridged input round answers on it); a session the upstream forgot
   * (404) is opened again, once.
   */
  private async sendPooled(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage, retried = false): Promise<UpstreamReply> {
    const modern = ctx.modern!;
    const key = UpstreamSessionPool.keyOf(ctx.caller.connectionGuid, route.assignmentGuid, this.hostOf(ctx));
    const lease = this.sessions.acquire(
      key,
      async () => {
        const opened = await this.openUpstream(ctx, route, this.hostOf(ctx));
        return { ...(opened.sessionId ? { sessionId: opened.sessionId } : {}), ...(opened.protocolVersion ? { protocolVersion: opened.protocolVersion } : {}) };
      },
      (session) =>
        void deleteUpstreamSession({ ...this.request(ctx, route, credential, session.sessionId, session.protocolVersion), signal: AbortSignal.timeout(5_000) }),
    );
    let reply: UpstreamReply;
    try {
      const upstream = await lease.session;
      modern.upstreams.set(route.assignmentGuid, upstream);
      reply = await postToUpstream(this.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion), message);
    } catch (err) {
      lease.release();
      modern.upstreams.delete(route.assignmentGuid);
      if (err instanceof UpstreamHttpError && err.status === 404 && !retried) {
        this.sessions.drop(key);
        return this.sendPooled(ctx, route, credential, message, true);
      }
      if (err instanceof GatewayCallError) throw err;
      throw this.failed(ctx, route, message, err);
    }
    return {
      ...reply,
      messages: (async function* () {
        try {
          yield* reply.messages;
        } finally {
          lease.release();
        }
      })(),
    };
  }

  /** Ends an upstream session opened for one request (and forgets it, so a later exchange of the request opens its own). */
  private closeTransient(ctx: HostContext, route: Route, credential: RouteCredential, upstream: { sessionId?: string; protocolVersion?: string }): void {
    if (ctx.modern?.upstreams.get(route.assignmentGuid) === upstream) ctx.modern.upstreams.delete(route.assignmentGuid);
    const closeAfter = this.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion);
    void deleteUpstreamSession({ ...closeAfter, signal: AbortSignal.timeout(5_000) });
  }

  /** Who the host is, as an upstream's initialize says it: its session, a 2026-07-28 host's envelope, or nobody in particular. */
  private hostOf(ctx: HostContext): Pick<GatewaySession, 'protocolVersion' | 'clientCapabilities' | 'clientInfo'> {
    if (ctx.session) return ctx.session;
    if (ctx.modern) return { protocolVersion: LATEST_PROTOCOL_VERSION, ...ctx.modern.identity };
    return SESSIONLESS_HOST;
  }

  /** One exchange with an upstream that speaks only the legacy HTTP+SSE transport (see upstream-legacy-sse.ts). */
  private async sendLegacy(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamReply> {
    const init = this.hostOf(ctx);
    const liveKey = `${route.assignmentGuid}|${ctx.caller.connectionGuid}|${ctx.session?.id ?? ''}`;
    try {
      return await sendToLegacyUpstream(this.request(ctx, route, credential, undefined, undefined), init, liveKey, message);
    } catch (err) {
      throw this.failed(ctx, route, message, err);
    }
  }

  /** Turns an upstream failure into the host's error, forgetting a refused credential and feeding the alerts. */
  private failed(ctx: HostContext, route: Route, message: JSONRPCMessage, err: unknown): GatewayCallError {
    if (err instanceof GatewayCallError) return err;
    const status = err instanceof UpstreamHttpError ? err.status : undefined;
    if (status === 401 || status === 403) this.catalogs.forgetCredential(route);
    const reason = this.describe(route, err);
    this.health.failed(ctx.caller, route, {
      status,
      reason,
      method: (message as { method?: string }).method ?? 'response',
      secrets: ctx.record.secrets,
      headerNames: ctx.record.headerNames,
      traceId: ctx.trace.traceId,
    });
    return new GatewayCallError(ERRORS.upstream, `Server ${route.slug} failed: ${reason}`, {
      inboundServerGuid: route.serverGuid,
      ...(status ? { upstreamStatus: status } : {}),
    });
  }

  /** A short reason for an upstream failure, without secrets. */
  private describe(route: Route, err: unknown): string {
    if (err instanceof UpstreamHttpError)
      return err.status === 401 || err.status === 403
        ? `the upstream refused the gateway's credentials (HTTP ${err.status})`
        : `the upstream answered HTTP ${err.status}`;
    if (err instanceof ResponseTooLargeError) return `the answer exceeded the limit of ${err.limit} bytes`;
    if (err instanceof AppError) return err.message;
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e?.name === 'TimeoutError') return `no answer within ${this.services.config.gateway.upstreamTimeoutMs} ms`;
    if (e?.name === 'AbortError') return 'the request was cancelled';
    const cause = e?.cause?.code ?? e?.cause?.message;
    return `could not reach ${new URL(route.url).host}${cause ? ` (${cause})` : ''}`;
  }
}
