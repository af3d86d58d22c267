import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  createMcpHandler,
  LOG_LEVEL_META_KEY,
  Server,
  type JSONRPCMessage,
  type McpHttpHandler,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Catalog, Catalogs } from './catalog.js';
import type { CallRecord } from './call-record.js';
import { ListenChanges } from './listen-changes.js';
import type { UpstreamFetch } from './upstream-client.js';
import { GATEWAY_VERSION, type GatewayProxy } from './proxy.js';
import type { TraceContext } from './trace-context.js';
import { HeldCalls, type ModernLeg } from './bridge-held-calls.js';
import { CACHEABLE_METHODS, encodeDirectError, encodeDirectResult, type DirectRequest } from './modern-direct.js';
import { RequestStates } from './bridge-request-state.js';
import type { HostIdentity } from './modern-upstream.js';
import { modernCapabilities, TASK_METHODS } from './host-tasks.js';
import { gatewayInstructions } from './aggregate.js';

/** The methods a 2026-07-28 host may send through a gateway, each served by the same proxy as a 2025 host's. */
const RELAYED_METHODS = [
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
] as const;

/**
 * The tasks extension's requests (host-tasks.ts), relayed the same way: not core methods of the revision, so the SDK
 * takes them with schemas of their own, which leave the params to the proxy to judge (it names what is wrong, in words).
 */
const TASK_REQUEST_SCHEMAS = { params: z.looseObject({}), result: z.looseObject({}) };

/** What one modern request is served with; the route hands it to the SDK's handler as authInfo.extra. */
export interface ModernHostRequest {
  caller: GatewayCaller;
  catalog: Catalog;
  trace: TraceContext;
  signal: AbortSignal;
  /** The call log's record of this request (one per HTTP request, as for a 2025 host). */
  record: (message: JSONRPCMessage) => CallRecord;
}

/** The SDK's handler, and the direct path beside it for the requests it admits (modern-direct.ts). */
export interface ModernHostHandler extends McpHttpHandler {
  /**
   * Serves a request admitted by directRequest: the JSON-RPC answer, as the SDK's handler would encode it.
   * `notify` gets what the upstream sends the host before it (progress, log messages), in order.
   */
  serveDirect(host: ModernHostRequest, request: DirectRequest, notify: (notification: JSONRPCMessage) => Promise<void>): Promise<Record<string, unknown>>;
}

/**
 * Who the host says it is in the request's envelope (the SDK has checked its shape),
 * and the log level it asks for: the SDK lifts the envelope out of `params._meta`, so
 * it reaches upstreams only from here.
 */
function identityOf(lifted: unknown, gatewayName: string): HostIdentity {
  const envelope = (lifted ?? {}) as Record<string, unknown>;
  const clientInfo = envelope[CLIENT_INFO_META_KEY] as HostIdentity['clientInfo'] | undefined;
  const clientCapabilities = envelope[CLIENT_CAPABILITIES_META_KEY] as Record<string, unknown> | undefined;
  const logLevel = envelope[LOG_LEVEL_META_KEY] as HostIdentity['logLevel'];
  return {
    clientInfo: clientInfo ?? { name: gatewayName, version: GATEWAY_VERSION },
    clientCapabilities: clientCapabilities ?? {},
    ...(logLevel !== undefined ? { logLevel } : {}),
  };
}

/**
 * The host side of revision 2026-07-28 at a gateway's connect URL (contract 8.1),
 * served by the v2 SDK: server/discover, the per-request envelope, the
 * Mcp-Method/Mcp-Name header checks and resultType are the SDK's; every request
 * then goes through the same proxy (routing, naming, curation, upstream revisions,
 * call logs) as a 2025 host's, without a session. `subscriptions/listen` is the
 * SDK's too, fed per caller by listen-changes.ts. 2025 traffic never reaches this
 * handler: the route sends it to the proxy directly.
 */
export function createModernHostHandler(proxy: GatewayProxy, deps: { services: Services; catalogs: Catalogs; fetch: UpstreamFetch }): ModernHostHandler {
  const listen = new ListenChanges(deps);
  const calls = new HeldCalls(proxy, new RequestStates(deps.services.gatewaySessionKey), deps.services.config.gateway.upstreamTimeoutMs);
  /** One request of the host, by either path: the SDK's handler (below) or the direct one (serveDirect). */
  const serve = async (host: ModernHostRequest, leg: Pick<ModernLeg, 'identity' | 'method' | 'params' | 'requestState' | 'inputResponses' | 'notify'>) => {
    const result = await calls.serve({ caller: host.caller, catalog: host.catalog, trace: host.trace, signal: host.signal, record: host.record, ...leg });
    return CACHEABLE_METHODS.has(leg.method) ? { ...result, cacheScope: 'private' } : result;
  };
  const handler = createMcpHandler(
    (request) => {
      const host = request.authInfo?.extra?.modernHost as ModernHostRequest;
      const instructions = gatewayInstructions(
        host.catalog.naming,
        host.catalog.routes.map((route) => ({ slug: route.slug, text: route.features?.instructions })),
      );
      const server = new Server(
        { name: host.caller.gatewayName, version: GATEWAY_VERSION },
        { capabilities: modernCapabilities(host.catalog), ...(instructions ? { instructions } : {}) },
      );
      const serveRequest = (method: string, params: Record<string, unknown>, ctx: ServerContext) =>
        serve(host, {
          identity: identityOf(ctx.mcpReq.envelope, host.caller.gatewayName),
          method,
          params,
          requestState: ctx.mcpReq.requestState<string>(),
          inputResponses: ctx.mcpReq.inputResponses,
          notify: (notification) => ctx.mcpReq.notify(notification as never),
        }) as never;
      for (const method of RELAYED_METHODS)
        server.setRequestHandler(method, (incoming: { params?: Record<string, unknown> }, ctx: ServerContext) =>
          serveRequest(method, incoming.params ?? {}, ctx),
        );
      for (const method of TASK_METHODS) server.setRequestHandler(method, TASK_REQUEST_SCHEMAS, (params, ctx) => serveRequest(method, params, ctx));
      return server;
    },
    { legacy: 'reject', bus: listen.bus },
  );
  return {
    ...handler,
    // A listen stream belongs to the caller whose request opened it. Only a listen request runs in its caller's async
    // context: entering one costs every other request for nothing.
    fetch: (request, options) => {
      const host = options?.authInfo?.extra?.modernHost as ModernHostRequest | undefined;
      const body = options?.parsedBody as { method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } } | undefined;
      const mayListen = typeof body?.method !== 'string' || body.method === 'subscriptions/listen';
      const subscribed = body?.params?.notifications?.resourceSubscriptions;
      const resources = Array.isArray(subscribed) ? subscribed.filter((uri): uri is string => typeof uri === 'string') : [];
      return host && mayListen
        ? listen.bus.as({ caller: host.caller, catalog: host.catalog, resources }, () => handler.fetch(request, options))
        : handler.fetch(request, options);
    },
    serveDirect: async (host, request, notify) => {
      try {
        const result = await serve(host, {
          identity: identityOf(request.envelope, host.caller.gatewayName),
          method: request.method,
          params: request.params,
          requestState: undefined,
          inputResponses: undefined,
          notify,
        });
        return {
          jsonrpc: '2.0',
          id: request.id,
          result: encodeDirectResult(request.method, result, { name: host.caller.gatewayName, version: GATEWAY_VERSION }),
        };
      } catch (error) {
        return encodeDirectError(request.id, error);
      }
    },
    close: async () => {
      calls.close();
      listen.close();
      await handler.close();
    },
  };
}
