import { setTimeout as sleep } from 'node:timers/promises';
import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage, type ServerEvent, type SubscriptionFilter } from '@modelcontextprotocol/server';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { Catalog, Catalogs, Route, RouteCredential } from './catalog.js';
import type { HostSubscriptions } from './host-subscriptions.js';
import { LIST_CHANGES, listChangeOf } from './list-changes.js';
import { MODERN_REVISION, toModernUpstream, type HostIdentity } from './modern-upstream.js';
import type { GatewaySession } from './session-id.js';
import { traceContextFrom, upstreamTraceparent } from './trace-context.js';
import type { UpstreamFetch } from './upstream-client.js';
import { deleteUpstreamSession, initializeUpstream, openUpstreamStream, postToUpstream, tellUpstream, type UpstreamRequest } from './upstream-http.js';
import { routeForUri } from './aggregate.js';

/** What the gateway asks of a 2026-07-28 upstream's `subscriptions/listen` for a 2026-07-28 host: every list change. */
const ALL_LISTS: SubscriptionFilter = Object.fromEntries(LIST_CHANGES.map((c) => [c.flag, true]));

/** How soon a listen that ended is opened again, and the longest wait while it keeps ending. */
const RELISTEN_MIN_MS = 1_000;
const RELISTEN_MAX_MS = 30_000;
/** The wait before opening a listen again after `failures` ends since the upstream last answered one. */
export const relistenDelay = (failures: number): number => Math.min(RELISTEN_MAX_MS, RELISTEN_MIN_MS * 2 ** failures);

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
 * ends, or could not be opened, is opened again as followModernUpstreams does
 * (relistenDelay); an upstream with no stream to follow (stateless) is left alone.
 * Each reopened stream is announced as a change of each list the upstream offers:
 * what it announced while it was not followed is lost, and a list the host took
 * while it could not be reached left it out (aggregate.ts).
 * Returns the function that stops following.
 */
export function followUpstreamLists(
  deps: UpstreamListsDeps,
  caller: GatewayCaller,
  catalog: Catalog,
  deliver: (event: ServerEvent) => void,
  resources: readonly string[] = [],
): () => void {
  const abort = new AbortController();
  const relay = async (messages: AsyncIterable<JSONRPCMessage>, uris: ReadonlySet<string>, answered: () => void) => {
    for await (const message of messages) {
      answered();
      if (abort.signal.aborted) continue;
      const m = message as { method?: string; params?: { uri?: unknown } };
      const event = listChangeOf(m.method)?.event;
      if (event) deliver(event);
      // Only a URI the host subscribed to on this upstream, as `{ uri }`: nothing else the upstream writes passes.
      else if (m.method === 'notifications/resources/updated' && typeof m.params?.uri === 'string' && uris.has(m.params.uri))
        deliver({ kind: 'resource_updated', uri: m.params.uri });
    }
  };
  for (const route of catalog.routes) {
    if (route.transport === 'sse') continue;
    // The URIs of the host's listen this upstream serves (resources/read would go to it), if it offers subscriptions.
    const subscribable = (route.features?.capabilities.resources as { subscribe?: unknown } | undefined)?.subscribe === true;
    const uris = subscribable ? resources.filter((uri) => routeForUri(catalog.routes, uri) === route) : [];
    void (async () => {
      for (let failures = 0, attempt = 0; !abort.signal.aborted; attempt++) {
        let followed = true;
        try {
          followed = await followOne(deps, caller, route, uris, abort.signal, (messages) => {
            if (attempt > 0 && !abort.signal.aborted) for (const { event } of listsOf(route)) deliver(event);
            return relay(messages, new Set(uris), () => (failures = 0));
          });
        } catch (err) {
          if (abort.signal.aborted) return;
          deps.services.logger.debug(
            { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
            'listen: an upstream list-change stream ended',
          );
        }
        if (!followed) return;
        await sleep(relistenDelay(failures++), undefined, { signal: abort.signal }).catch(() => undefined);
      }
    })();
  }
  return () => abort.abort();
}

/** An exchange that opens a stream the gateway follows for as long as its host listens (no trace of the host's, no timeout). */
export function followingRequest(fetch: UpstreamFetch, route: Route, credential: RouteCredential, signal: AbortSignal): UpstreamRequest {
  return {
    url: route.url,
    credentialHeaders: credential.headers,
    traceparent: upstreamTraceparent(traceContextFrom(undefined, undefined)),
    signal,
    // The stream lasts as long as the host listens; only the exchanges that open it are timed.
    maxResponseBytes: Number.MAX_SAFE_INTEGER,
    fetch,
  };
}

/**
 * Opens a 2026-07-28 upstream's `subscriptions/listen` with `filter`, as `host`: its
 * messages (the acknowledgement first), until the upstream ends the stream or
 * `req.signal` aborts. The stream is not timed: it lasts as long as it is followed.
 */
async function listenUpstream(req: UpstreamRequest, host: HostIdentity, filter: SubscriptionFilter): Promise<AsyncIterable<JSONRPCMessage>> {
  const listen = toModernUpstream(
    { jsonrpc: '2.0', id: 'gateway-listen', method: 'subscriptions/listen', params: { notifications: filter } } as JSONRPCMessage,
    host,
  );
  const reply = await postToUpstream({ ...req, protocolVersion: MODERN_REVISION, routingHeaders: listen.headers }, listen.message);
  return reply.messages;
}

async function followOne(
  deps: UpstreamListsDeps,
  caller: GatewayCaller,
  route: Route,
  uris: readonly string[],
  signal: AbortSignal,
  relay: (messages: AsyncIterable<JSONRPCMessage>) => Promise<void>,
): Promise<boolean> {
  const credential = await deps.catalogs.credential(route);
  const clientInfo = { name: caller.gatewayName, version: '1.0.0' };
  const req = followingRequest(deps.fetch, route, credential, signal);
  if (route.features?.protocolVersion === MODERN_REVISION) {
    const filter: SubscriptionFilter = { ...ALL_LISTS, ...(uris.length > 0 ? { resourceSubscriptions: [...uris] } : {}) };
    await relay(await listenUpstream(req, { clientInfo, clientCapabilities: {} }, filter));
    return true;
  }
  const opened = await initializeUpstream(
    { ...req, timeoutMs: deps.services.config.gateway.upstreamTimeoutMs },
    { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo },
  );
  // A stateless upstream has no stream of its own to follow.
  if (!opened.sessionId) return false;
  const inSession = { ...req, sessionId: opened.sessionId, protocolVersion: opened.protocolVersion ?? undefined };
  try {
    const messages = await openUpstreamStream(inSession);
    if (!messages) return false;
    // The session's stream is open: what the subscriptions announce comes on it.
    for (const [i, uri] of uris.entries())
      await tellUpstream(inSession, { jsonrpc: '2.0', id: `gateway-subscribe-${i}`, method: 'resources/subscribe', params: { uri } } as JSONRPCMessage);
    await relay(messages);
    return true;
  } finally {
    void deleteUpstreamSession({ ...inSession, signal: AbortSignal.timeout(5_000), timeoutMs: 5_000 });
  }
}

/** The lists an upstream offers (every list while its features are unknown). */
export const listsOf = (route: Route) => LIST_CHANGES.filter((c) => !route.features || route.features.capabilities[c.list] !== undefined);

/** The list changes an upstream says it announces (`listChanged` in the capabilities learned at validation), as a listen filter asks for them. */
export function offeredListChanges(route: Route): SubscriptionFilter {
  const capabilities = route.features?.capabilities ?? {};
  const offers = (key: string) => (capabilities[key] as { listChanged?: unknown } | undefined)?.listChanged === true;
  return Object.fromEntries(LIST_CHANGES.filter((c) => offers(c.list)).map((c) => [c.flag, true]));
}

/** One upstream listen a 2025 host's event stream holds: its filter and the resource URIs in it (as JSON, to compare). */
interface UpstreamListen {
  filter: string;
  uris: string;
  abort: AbortController;
}

/**
 * For a 2025 host's event stream (GET): follows each 2026-07-28 upstream of the
 * catalog, which has no stream of a session, with one `subscriptions/listen` (as the
 * session's host, with the caller's credential) asking for what the host would hear
 * on a 2025 upstream's own stream: the list changes the upstream's capabilities offer
 * (`listChanged`) and the resources the session subscribed to on it
 * (host-subscriptions.ts). An upstream that offers neither is not asked. A change of
 * the subscriptions opens the upstream's listen again with the new filter and closes
 * the old one once the new one is acknowledged (so nothing is lost meanwhile; a
 * notification may come twice), or keeps the old one when the new one fails; the last
 * URI gone, the listen carries the list changes only (or is closed). Passed to the
 * host: the list_changed notifications asked for, without params, and
 * `notifications/resources/updated` of a URI the session subscribes to now, as
 * `{ uri }` (a URI the host itself chose), so nothing else an upstream writes reaches
 * the host this way, and an unsubscribed URI is silent from its unsubscribe on. A
 * listen the upstream ends, or that could not be opened, is opened again after
 * RELISTEN_MIN_MS, doubling up to RELISTEN_MAX_MS while it keeps failing (an
 * acknowledged listen starts the count again), and announced as a change of each list
 * the upstream offers, as in followUpstreamLists. All end with the session (DELETE).
 * Returns the function that stops following.
 */
export function followModernUpstreams(
  deps: Pick<UpstreamListsDeps, 'catalogs' | 'fetch'> & { logger: Services['logger'] },
  session: GatewaySession,
  catalog: Catalog,
  subscriptions: HostSubscriptions,
  deliver: (message: JSONRPCMessage) => void,
): () => void {
  const host: HostIdentity = { clientInfo: session.clientInfo, clientCapabilities: session.clientCapabilities };
  const modern = catalog.routes.filter((route) => route.features?.protocolVersion === MODERN_REVISION);
  const listens = new Map<string, UpstreamListen>();
  /** Per assignment: the listens that ended since the last acknowledged one, and the reopening planned. */
  const failures = new Map<string, number>();
  /** The assignments whose listen ended or failed since one was last acknowledged: the next acknowledgement is announced as list changes. */
  const gaps = new Set<string>();
  const reopening = new Map<string, NodeJS.Timeout>();
  let stopped = false;
  const reopenLater = (assignmentGuid: string) => {
    if (stopped || reopening.has(assignmentGuid)) return;
    const failed = failures.get(assignmentGuid) ?? 0;
    failures.set(assignmentGuid, failed + 1);
    const timer = setTimeout(() => {
      reopening.delete(assignmentGuid);
      void sync();
    }, relistenDelay(failed));
    timer.unref();
    reopening.set(assignmentGuid, timer);
  };
  const subscribedOn = (assignmentGuid: string, uri: unknown): uri is string =>
    typeof uri === 'string' && subscriptions.of(session).get(uri) === assignmentGuid;

  /** Follows one listen; `opened` is told once: true at the upstream's acknowledgement, false when it failed or ended before. */
  const follow = async (route: Route, filter: SubscriptionFilter, listen: UpstreamListen, opened: (acknowledged: boolean) => void): Promise<void> => {
    try {
      const credential = await deps.catalogs.credential(route);
      const messages = await listenUpstream(followingRequest(deps.fetch, route, credential, listen.abort.signal), host, filter);
      for await (const message of messages) {
        const m = message as { method?: string; params?: { uri?: unknown } };
        if (m.method === 'notifications/subscriptions/acknowledged') {
          failures.delete(route.assignmentGuid);
          if (gaps.delete(route.assignmentGuid) && !listen.abort.signal.aborted)
            for (const { method } of listsOf(route)) deliver({ jsonrpc: '2.0', method } as JSONRPCMessage);
          opened(true);
        }
        if (listen.abort.signal.aborted || !m.method) continue;
        const flag = listChangeOf(m.method)?.flag;
        if (flag && filter[flag]) deliver({ jsonrpc: '2.0', method: m.method } as JSONRPCMessage);
        const uri = m.params?.uri;
        if (m.method === 'notifications/resources/updated' && subscribedOn(route.assignmentGuid, uri))
          deliver({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } } as JSONRPCMessage);
      }
    } catch (err) {
      if (!listen.abort.signal.aborted)
        deps.logger.debug(
          { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
          "an upstream listen of a host's event stream ended",
        );
    } finally {
      opened(false);
      if (listens.get(route.assignmentGuid) === listen) {
        listens.delete(route.assignmentGuid);
        // Ended by the upstream (or never opened), not replaced or stopped here: the host would hear nothing more from it.
        if (!listen.abort.signal.aborted) {
          gaps.add(route.assignmentGuid);
          reopenLater(route.assignmentGuid);
        }
      }
    }
  };

  const sync = async (): Promise<void> => {
    if (stopped) return;
    const wanted = new Map<string, string[]>();
    for (const [uri, assignmentGuid] of subscriptions.of(session)) wanted.set(assignmentGuid, [...(wanted.get(assignmentGuid) ?? []), uri]);
    const opening: Promise<void>[] = [];
    for (const assignmentGuid of new Set([...listens.keys(), ...wanted.keys(), ...modern.map((route) => route.assignmentGuid)])) {
      const route = catalog.byAssignment.get(assignmentGuid);
      const uris = (wanted.get(assignmentGuid) ?? []).sort();
      const filter: SubscriptionFilter = { ...(route && offeredListChanges(route)), ...(uris.length > 0 && { resourceSubscriptions: uris }) };
      const old = listens.get(assignmentGuid);
      if (old?.filter === JSON.stringify(filter)) continue;
      if (Object.keys(filter).length === 0 || !route || route.features?.protocolVersion !== MODERN_REVISION) {
        old?.abort.abort();
        listens.delete(assignmentGuid);
        continue;
      }
      const listen: UpstreamListen = { filter: JSON.stringify(filter), uris: JSON.stringify(uris), abort: new AbortController() };
      listens.set(assignmentGuid, listen);
      const acknowledged = new Promise<boolean>((resolve) => void follow(route, filter, listen, resolve));
      const settled = acknowledged.then((ok) => {
        if (!old || old.abort.signal.aborted) return;
        if (ok || stopped) return old.abort.abort();
        // The new filter could not be followed: the old one still is (the next change tries again).
        if (!listens.has(assignmentGuid)) listens.set(assignmentGuid, old);
        else old.abort.abort();
      });
      // A subscription change waits for the listens whose URIs it changed, not for another upstream's list changes.
      if ((old?.uris ?? '[]') !== listen.uris) opening.push(settled);
    }
    await Promise.all(opening);
  };

  const stop = () => {
    stopped = true;
    for (const timer of reopening.values()) clearTimeout(timer);
    reopening.clear();
    unwatch();
    for (const listen of listens.values()) listen.abort.abort();
    listens.clear();
  };
  void sync();
  // An ended session (DELETE) has nothing more to hear, though its host may keep the connection open.
  const unwatch = subscriptions.watch(session, async (ended) => (ended ? stop() : sync()));
  return stop;
}
