import { randomBytes } from 'node:crypto';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type LoggingLevel, type RequestId } from '@modelcontextprotocol/server';
import type { Services } from '../core/services.js';
import { echoed } from '../core/echoed.js';
import {
  exposeItems,
  gatewayInstructions,
  LIST_CAPABILITY,
  LIST_KEY,
  MAX_LIST_PAGES,
  nameItems,
  resolveExposedName,
  routeForUri,
  type ExposedItems,
  type ListMethod,
} from './aggregate.js';
import { InputWaiters } from './bridge-input-rounds.js';
import { ERRORS, errorResponse, GATEWAY_VERSION, GatewayCallError, SessionExpired, type HostContext, type HostReply, type Outcome } from './call-model.js';
import { settle } from './call-outcome.js';
import type { Catalog, Catalogs, Route } from './catalog.js';
import { HostRelay } from './host-relay.js';
import { HostSubscriptions } from './host-subscriptions.js';
import { HostTasks, sessionCapabilities } from './host-tasks.js';
import { malformedRequestParams } from '../mcp/request-params.js';
import type { ParamHeaderSchemas } from './mcp-param-headers.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { cancelledTarget, unrelayId } from './relay.js';
import type { GatewaySession } from './session-id.js';
import type { TraceContext } from './trace-context.js';
import type { UpstreamFetch } from './upstream-client.js';
import type { UpstreamHealth } from './upstream-health.js';
import { Upstreams } from './upstreams.js';

export {
  ERRORS,
  GATEWAY_CAPABILITIES,
  GATEWAY_VERSION,
  GatewayCallError,
  type HostContext,
  type HostReply,
  type ModernHostContext,
  type Outcome,
} from './call-model.js';

/**
 * The MCP proxy behind each gateway's connect URL, as a dispatcher: it takes one
 * JSON-RPC message from the host (any host revision: the routes translate theirs
 * into a HostContext) and decides an outcome, which settle() turns into the reply
 * and the call-log row. Upstreams are spoken to through upstreams.ts (one adapter
 * per upstream revision). What a session needs travels in its sealed id; what a
 * 2025 session asks later (a log level, resource subscriptions) is kept in this
 * process only (session-store.ts, per replica: docs/gateway.md).
 */
export class GatewayProxy {
  /** 2025 hosts' answers to the requests bridged from 2026-07-28 upstreams' input_required results, awaited here. */
  private readonly inputWaiters = new InputWaiters();
  private readonly upstreams: Upstreams;
  private readonly relays: HostRelay;
  /** Tasks relayed for 2026-07-28 hosts (the extension) and 2025-11-25 hosts (core tasks): host-tasks.ts. */
  readonly tasks: HostTasks;
  /** 2025 hosts' subscriptions to resources of 2026-07-28 upstreams, which their event streams follow. */
  readonly subscriptions: HostSubscriptions;

  constructor(
    private readonly services: Pick<Services, 'config' | 'logger' | 'db' | 'configChanges' | 'gatewaySessionKey'>,
    catalogs: Catalogs,
    health: UpstreamHealth,
    fetch: UpstreamFetch,
  ) {
    this.upstreams = new Upstreams(services, catalogs, health, fetch);
    this.relays = new HostRelay(this.upstreams, this.inputWaiters, services.config.gateway.upstreamTimeoutMs);
    this.tasks = new HostTasks(services.gatewaySessionKey, this.relays);
    this.subscriptions = new HostSubscriptions(services.config.gateway.upstreamTimeoutMs);
  }

  /** Ends the pooled upstream sessions and the tasks' held streams (the process is closing). */
  close(): void {
    this.tasks.close();
    this.upstreams.close();
  }

  /** Tools' `x-mcp-header` marks as this process knows them (a 2026-07-28 host's own headers are checked against them). */
  get paramSchemas(): ParamHeaderSchemas {
    return this.upstreams.kit.paramSchemas;
  }

  /** Ends a session its host ended: what this process keeps for it is forgotten, its upstream sessions are ended. */
  async endSession(session: GatewaySession, catalog: Catalog, trace: TraceContext): Promise<void> {
    this.upstreams.kit.logLevels.forget(session);
    this.subscriptions.forget(session);
    await this.upstreams.endSessions(session, catalog, trace);
  }

  /** Serves one message the host POSTed: the outcome, rendered, its row written (call-outcome.ts). */
  async handle(ctx: HostContext, message: JSONRPCMessage): Promise<HostReply> {
    return settle(ctx.record, await this.dispatch(ctx, message));
  }

  private async dispatch(ctx: HostContext, message: JSONRPCMessage): Promise<Outcome> {
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
          return { kind: 'answer', message: { jsonrpc: '2.0', id, result: {} } as JSONRPCMessage };
        case 'tools/list':
        case 'prompts/list':
        case 'resources/list':
        case 'resources/templates/list':
          return await this.list(ctx, id, m.method);
        case 'tools/call':
        case 'prompts/get':
          return await this.callNamed(ctx, message, m.method, m.params ?? {});
        case 'resources/read':
          return await this.callByUri(ctx, message, String(m.params!.uri));
        case 'resources/subscribe':
        case 'resources/unsubscribe':
          // A 2026-07-28 upstream has no such method: the gateway keeps the subscription (host-subscriptions.ts).
          return (await this.subscriptions.answer(ctx, id, m.method, String(m.params!.uri))) ?? (await this.callByUri(ctx, message, String(m.params!.uri)));
        case 'completion/complete':
          return await this.complete(ctx, message, m.params ?? {});
        case 'tasks/get':
        case 'tasks/update':
        case 'tasks/cancel':
        case 'tasks/result':
          return await this.tasks.serve(ctx, message, m.method, m.params ?? {});
        case 'logging/setLevel':
          // A 2026-07-28 upstream keeps no session: the level goes with each later request of the session instead.
          if (ctx.session) this.upstreams.kit.logLevels.set(ctx.session, m.params!.level as LoggingLevel);
          await this.broadcast(ctx, message, true);
          return { kind: 'answer', message: { jsonrpc: '2.0', id, result: {} } as JSONRPCMessage };
        default:
          throw new GatewayCallError(ERRORS.methodNotFound, `Method not found: ${m.method}`);
      }
    } catch (err) {
      if (err instanceof SessionExpired) return { kind: 'session-expired' };
      const e = err instanceof GatewayCallError ? err : new GatewayCallError(ERRORS.internal, 'The gateway could not serve this request.');
      if (!(err instanceof GatewayCallError))
        this.services.logger.error({ err: err instanceof Error ? err.message : String(err), method: m.method }, 'gateway request failed');
      return { kind: 'answer', message: errorResponse(id, e.code, e.message, e.data), failure: e.logMessage };
    }
  }

  // --- initialize and lists ---------------------------------------------------------

  private async initialize(ctx: HostContext, id: RequestId, params: Record<string, unknown>): Promise<Outcome> {
    const requested = typeof params.protocolVersion === 'string' ? params.protocolVersion : LATEST_PROTOCOL_VERSION;
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
    const session: GatewaySession = {
      id: randomBytes(8).toString('hex'),
      connectionGuid: ctx.caller.connectionGuid,
      protocolVersion,
      clientCapabilities: (params.capabilities ?? {}) as Record<string, unknown>,
      clientInfo: (params.clientInfo ?? { name: 'unknown', version: '0' }) as GatewaySession['clientInfo'],
      upstreams: {},
      createdAt: Date.now(),
    };
    const opened = await Promise.all(
      // A 2026-07-28 upstream has no session to open: each request carries its envelope.
      ctx.catalog.routes
        .filter((route) => route.features?.protocolVersion !== MODERN_REVISION)
        .map(async (route) => {
          try {
            return { route, init: await this.upstreams.open(ctx, route, session) };
          } catch (err) {
            this.services.logger.warn(
              { inboundServerGuid: route.serverGuid, reason: this.upstreams.describe(route, err) },
              'an upstream could not be initialized',
            );
            return { route, init: null };
          }
        }),
    );
    const said = new Map<string, string | null>();
    for (const { route, init } of opened) {
      if (!init) continue;
      const { instructions: text, ...upstream } = init;
      session.upstreams[route.assignmentGuid] = upstream;
      said.set(route.assignmentGuid, text);
    }
    // A 2026-07-28 upstream has no initialize: what it said at validation.
    const texts = ctx.catalog.routes.map((route) => ({
      slug: route.slug,
      text: route.features?.protocolVersion === MODERN_REVISION ? route.features.instructions : said.get(route.assignmentGuid),
    }));
    const instructions = gatewayInstructions(ctx.catalog.naming, texts);
    const result = {
      protocolVersion,
      capabilities: sessionCapabilities(ctx.catalog, protocolVersion),
      serverInfo: { name: ctx.caller.gatewayName, version: GATEWAY_VERSION },
      ...(instructions ? { instructions } : {}),
    };
    return { kind: 'answer', message: { jsonrpc: '2.0', id, result } as JSONRPCMessage, newSession: session };
  }

  private async list(ctx: HostContext, id: RequestId, method: ListMethod): Promise<Outcome> {
    const key = LIST_KEY[method];
    const capability = LIST_CAPABILITY[method];
    const failures: string[] = [];
    const listed = ctx.catalog.routes.filter((r) => !r.features || r.features.capabilities[capability] !== undefined);
    const perRoute = await Promise.all(
      listed.map(async (route) => {
        try {
          const items: Record<string, unknown>[] = [];
          let cursor: string | undefined;
          for (let page = 0; page < MAX_LIST_PAGES; page++) {
            const request = { jsonrpc: '2.0', id: `list-${page}`, method, params: cursor ? { cursor } : {} } as JSONRPCMessage;
            const response = await this.exchangeForResult(ctx, route, request);
            items.push(...((response[key] as Record<string, unknown>[] | undefined) ?? []));
            cursor = typeof response.nextCursor === 'string' ? response.nextCursor : undefined;
            if (!cursor) break;
          }
          // The newest marks of a 2026-07-28 upstream's tools (Mcp-Param-* headers), when the list is whole.
          if (key === 'tools' && !cursor && route.features?.protocolVersion === MODERN_REVISION) this.paramSchemas.learn(route, items);
          return exposeItems(route, key, items);
        } catch (err) {
          if (err instanceof SessionExpired) throw err;
          // One failing upstream must not hide the others: its items are left out.
          const reason = this.upstreams.describe(route, err);
          failures.push(`${route.slug}: ${reason}`);
          this.services.logger.warn({ inboundServerGuid: route.serverGuid, method, reason }, 'an upstream could not be listed');
          return { route, items: [] } satisfies ExposedItems;
        }
      }),
    );
    // When none could be listed, an empty list would say the gateway has nothing: the host is told why instead.
    if (listed.length > 0 && failures.length === listed.length)
      throw new GatewayCallError(ERRORS.upstream, `No server of this gateway could be listed (${method}): ${failures.slice(0, 5).join('; ')}`);
    return { kind: 'answer', message: { jsonrpc: '2.0', id, result: { [key]: nameItems(ctx.catalog, key, perRoute) } } as JSONRPCMessage };
  }

  /** Sends a request to one upstream and returns its result (throws GatewayCallError on an error answer). */
  private async exchangeForResult(ctx: HostContext, route: Route, request: JSONRPCMessage): Promise<Record<string, unknown>> {
    const reply = await this.upstreams.send(ctx, route, request);
    let final: Record<string, any> | null = null;
    for await (const msg of reply.messages) if ('result' in msg || 'error' in msg) final = msg as Record<string, any>;
    if (!final) throw new GatewayCallError(ERRORS.upstream, `Server ${route.slug} gave no answer.`);
    if (final.error) throw new GatewayCallError(final.error.code ?? ERRORS.upstream, String(final.error.message ?? 'error'));
    return final.result as Record<string, unknown>;
  }

  // --- routed calls ---------------------------------------------------------------

  private async callNamed(ctx: HostContext, message: JSONRPCMessage, method: 'tools/call' | 'prompts/get', params: Record<string, unknown>): Promise<Outcome> {
    const qualified = typeof params.name === 'string' ? params.name : '';
    const kind = method === 'tools/call' ? 'Tool' : 'Prompt';
    const resolved = resolveExposedName(ctx.catalog, method === 'tools/call' ? 'tools' : 'prompts', qualified);
    if ('refused' in resolved) {
      // Refused like an unknown name; the call log keeps the reason, and names the tool as its other rows do when it is a server's.
      ctx.record.toolName = (resolved.of?.name ?? qualified).slice(0, 500);
      if (resolved.of) ctx.record.inboundServerGuid = resolved.of.route.serverGuid;
      throw new GatewayCallError(ERRORS.invalidParams, `${kind} ${echoed(qualified)} not found on this gateway.`, undefined, resolved.refused);
    }
    if (!('route' in resolved)) {
      // No server's: the row keeps the name the host asked for.
      ctx.record.toolName = qualified.slice(0, 500);
      const why = resolved.slug ? ctx.catalog.unavailable.get(resolved.slug) : undefined;
      throw new GatewayCallError(
        ERRORS.invalidParams,
        why ? `${kind} ${echoed(qualified)} is not available: ${why}.` : `${kind} ${echoed(qualified)} not found on this gateway.`,
      );
    }
    ctx.record.toolName = resolved.name;
    if (method === 'prompts/get') return this.relays.relay(ctx, resolved.route, { ...message, params: { ...params, name: resolved.name } } as JSONRPCMessage);
    return this.tasks.callTool(ctx, resolved.route, resolved.name, message, params);
  }

  private async callByUri(ctx: HostContext, message: JSONRPCMessage, uri: string): Promise<Outcome> {
    const route = routeForUri(ctx.catalog.routes, uri);
    // The URI in the error's data, as servers answer it (SEP-2164), so a host can tell which read failed.
    if (!route) throw new GatewayCallError(ERRORS.invalidParams, `Resource ${echoed(uri)} not found on this gateway.`, { uri });
    ctx.record.toolName = uri.slice(0, 500);
    return this.relays.relay(ctx, route, message);
  }

  private async complete(ctx: HostContext, message: JSONRPCMessage, params: Record<string, unknown>): Promise<Outcome> {
    const ref = (params.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/resource') return this.callByUri(ctx, message, String(ref.uri ?? ''));
    const resolved = resolveExposedName(ctx.catalog, 'prompts', String(ref.name ?? ''));
    if (!('route' in resolved)) throw new GatewayCallError(ERRORS.invalidParams, `Prompt ${echoed(String(ref.name))} not found on this gateway.`);
    return this.relays.relay(ctx, resolved.route, { ...message, params: { ...params, ref: { ...ref, name: resolved.name } } } as JSONRPCMessage);
  }

  // --- messages that are not requests ---------------------------------------------

  /** The host answers a request an upstream sent (sampling, elicitation, roots): back to that upstream. */
  private async relayHostAnswer(ctx: HostContext, message: JSONRPCMessage): Promise<Outcome> {
    if (InputWaiters.answers(message)) {
      // An answer to a request bridged from an input_required result: the call waiting for it is in this process, or nowhere.
      const delivered = this.inputWaiters.deliver(message, ctx.caller.connectionGuid);
      ctx.record.inboundServerGuid = delivered?.serverGuid ?? null;
      const failure = delivered ? undefined : 'no call of this gateway process waits for this answer (it ended, or it waits in another replica)';
      return { kind: 'accepted', logged: { failure } };
    }
    const target = unrelayId((message as { id?: unknown }).id);
    const route = target ? ctx.catalog.byAssignment.get(target.assignmentGuid) : undefined;
    if (!target || !route) return { kind: 'accepted' };
    ctx.record.inboundServerGuid = route.serverGuid;
    try {
      await this.answerUpstream(ctx, message);
      return { kind: 'accepted', logged: {} };
    } catch (err) {
      if (err instanceof SessionExpired) return { kind: 'session-expired' };
      return { kind: 'accepted', logged: { failure: this.upstreams.describe(route, err) } };
    }
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
    await this.relays.tell(ctx, route, { ...message, id: target.id } as JSONRPCMessage);
  }

  private async relayNotification(ctx: HostContext, message: JSONRPCMessage): Promise<Outcome> {
    const method = (message as { method: string }).method;
    // The gateway already told each upstream it was initialized, when it opened it.
    if (method === 'notifications/initialized') return { kind: 'accepted' };
    const cancelled = cancelledTarget(message);
    if (cancelled) {
      const route = ctx.catalog.byAssignment.get(cancelled.assignmentGuid);
      if (route) await this.upstreams.send(ctx, route, cancelled.message).catch(() => undefined);
      return { kind: 'accepted' };
    }
    // A cancellation of a request this process serves to a 2026-07-28 upstream closes that request (host-cancellations.ts).
    if (method === 'notifications/cancelled' && ctx.session) this.relays.cancellations.cancel(ctx.session, message);
    // Cancellations of the host's own requests, roots/list_changed, progress: every upstream
    // of the session may care, and an upstream ignores what is not its own.
    await this.broadcast(ctx, message, false);
    return { kind: 'accepted' };
  }

  private async broadcast(ctx: HostContext, message: JSONRPCMessage, wait: boolean): Promise<void> {
    const routes = ctx.session ? ctx.catalog.routes.filter((r) => ctx.session!.upstreams[r.assignmentGuid]) : [];
    const all = Promise.allSettled(routes.map((route) => this.relays.tell(ctx, route, { ...message } as JSONRPCMessage)));
    if (wait) await all;
  }
}
