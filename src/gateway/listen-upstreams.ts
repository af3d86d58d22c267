import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ServerEvent } from '@modelcontextprotocol/server';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Catalog, Catalogs, Route } from './catalog.js';
import { MODERN_REVISION, toModernUpstream } from './modern-upstream.js';
import { traceContextFrom, upstreamTraceparent } from './trace-context.js';
import type { UpstreamFetch } from './upstream-client.js';
import { deleteUpstreamSession, initializeUpstream, openUpstreamStream, postToUpstream, type UpstreamRequest } from './upstream-http.js';

/** The upstream notifications a host's listen stream hears, as the SDK's change events. Nothing else of an upstream's stream is relayed. */
const EVENT_OF: Record<string, ServerEvent> = {
  'notifications/tools/list_changed': { kind: 'tools_list_changed' },
  'notifications/prompts/list_changed': { kind: 'prompts_list_changed' },
  'notifications/resources/list_changed': { kind: 'resources_list_changed' },
};

/** What the gateway asks of a 2026-07-28 upstream's `subscriptions/listen`. */
const ALL_LISTS = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true };

export interface UpstreamListsDeps {
  services: Services;
  catalogs: Catalogs;
  fetch: UpstreamFetch;
}

/**
 * Follows the upstreams' own list changes for one listen stream of a 2026-07-28
 * host, with the caller's credentials: a 2026-07-28 upstream through its own
 * `subscriptions/listen`, a 2025 upstream through a session of its own and that
 * session's event stream (GET), which is ended (DELETE) when the host's stream
 * closes. Only the list_changed notifications pass, as events without params, so
 * nothing an upstream writes reaches the host this way. An upstream reached over the
 * legacy HTTP+SSE transport is not followed (docs/gateway.md, Eras). A stream that
 * ends is not reopened: the host's listen stream stays, fed by configuration changes.
 * Returns the function that stops following.
 */
export function followUpstreamLists(deps: UpstreamListsDeps, caller: GatewayCaller, catalog: Catalog, deliver: (event: ServerEvent) => void): () => void {
  const abort = new AbortController();
  const relay = async (messages: AsyncIterable<JSONRPCMessage>) => {
    for await (const message of messages) {
      const event = EVENT_OF[(message as { method?: string }).method ?? ''];
      if (event && !abort.signal.aborted) deliver(event);
    }
  };
  for (const route of catalog.routes) {
    if (route.transport === 'sse') continue;
    followOne(deps, caller, route, abort.signal, relay).catch((err: unknown) => {
      if (abort.signal.aborted) return;
      deps.services.logger.debug(
        { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
        'listen: an upstream list-change stream ended',
      );
    });
  }
  return () => abort.abort();
}

async function followOne(
  deps: UpstreamListsDeps,
  caller: GatewayCaller,
  route: Route,
  signal: AbortSignal,
  relay: (messages: AsyncIterable<JSONRPCMessage>) => Promise<void>,
): Promise<void> {
  const credential = await deps.catalogs.credential(route);
  const clientInfo = { name: caller.gatewayName, version: '1.0.0' };
  const req: UpstreamRequest = {
    url: route.url,
    credentialHeaders: credential.headers,
    traceparent: upstreamTraceparent(traceContextFrom(undefined, undefined)),
    signal,
    // The stream lasts as long as the host listens; only the exchanges that open it are timed.
    maxResponseBytes: Number.MAX_SAFE_INTEGER,
    fetch: deps.fetch,
  };
  if (route.features?.protocolVersion === MODERN_REVISION) {
    const listen = toModernUpstream(
      { jsonrpc: '2.0', id: 'gateway-listen', method: 'subscriptions/listen', params: { notifications: ALL_LISTS } } as JSONRPCMessage,
      { clientInfo, clientCapabilities: {} },
    );
    const reply = await postToUpstream({ ...req, protocolVersion: MODERN_REVISION, routingHeaders: listen.headers }, listen.message);
    return relay(reply.messages);
  }
  const opened = await initializeUpstream(
    { ...req, timeoutMs: deps.services.config.gateway.upstreamTimeoutMs },
    { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo },
  );
  // A stateless upstream has no stream of its own to follow.
  if (!opened.sessionId) return;
  const inSession = { ...req, sessionId: opened.sessionId, protocolVersion: opened.protocolVersion ?? undefined };
  try {
    const messages = await openUpstreamStream(inSession);
    if (messages) await relay(messages);
  } finally {
    void deleteUpstreamSession({ ...inSession, signal: AbortSignal.timeout(5_000), timeoutMs: 5_000 });
  }
}
