import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { routeForUri } from './aggregate.js';
import { ERRORS, GatewayCallError, type HostContext, type Outcome } from './call-model.js';
import { MODERN_REVISION } from './modern-upstream.js';
import type { GatewaySession } from './session-id.js';
import { PerSessionStore, sessionKeyOf, type SessionKey } from './session-store.js';

/** Sessions whose subscriptions a process remembers (the one subscribed longest ago without an open event stream is forgotten first). */
const REMEMBERED_SESSIONS = 2_000;
/** What one session may subscribe to: a host watching more resources than this is refused, in words. */
export const MAX_SUBSCRIPTIONS_PER_SESSION = 100;
export const MAX_SUBSCRIBED_URI_CHARS = 2_048;

/** The resources a session subscribed to, each with the assignment that serves it. */
export type Subscribed = ReadonlyMap<string, string>;
/** What a session's event stream does when its subscriptions change (`ended`: the session ended); resolves when the change has taken effect upstream. */
type Watcher = (ended: boolean) => Promise<void>;

/**
 * `resources/subscribe` of a 2025 host to a resource of a 2026-07-28 upstream, which
 * has no such method: resource subscriptions ride on its `subscriptions/listen`. The
 * gateway answers the host itself and keeps the session's subscriptions here; the
 * session's event stream (GET, event-stream.ts) follows each such upstream with a
 * listen carrying the subscribed URIs (listen-upstreams.ts) and is told of every
 * change and of the session's end, so a subscription made while the stream is open takes effect before its
 * answer, and an unsubscribe stops the updates at once. Resource URIs reach hosts as
 * the upstreams gave them (aggregate.ts), so the updates need no rewriting. Kept per
 * process (PerSessionStore): a subscribe that reaches another replica than the one
 * holding the session's event stream does not reach that stream (docs/decisions.md,
 * Gateway). A 2025 upstream's own subscriptions are not kept here: its session has them.
 */
export class HostSubscriptions {
  private readonly watchers = new Map<string, Set<Watcher>>();
  /** A session whose event stream is open is never forgotten to make room for another's. */
  private readonly subscribed = new PerSessionStore<Subscribed>(REMEMBERED_SESSIONS, (key) => this.watchers.has(key));

  /** `settleMs`: the longest a subscribe waits for an open event stream's upstream to acknowledge it. */
  constructor(private readonly settleMs: number) {}

  /**
   * Serves a 2025 host's resources/subscribe or resources/unsubscribe when the resource's
   * route was learned as 2026-07-28; null for any other route (the request goes to the upstream).
   */
  async answer(ctx: HostContext, id: RequestId, method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): Promise<Outcome | null> {
    const route = routeForUri(ctx.catalog.routes, uri);
    if (!route || route.features?.protocolVersion !== MODERN_REVISION) return null;
    ctx.record.inboundServerGuid = route.serverGuid;
    ctx.record.toolName = uri.slice(0, 500);
    const session = ctx.session;
    if (method === 'resources/unsubscribe') {
      if (session) await this.change(session, (uris) => uris.delete(uri));
      return done(id);
    }
    if (!session)
      throw new GatewayCallError(
        ERRORS.invalidRequest,
        `resources/subscribe needs a session (initialize first): ${route.serverName} speaks MCP 2026-07-28, and the gateway keeps the subscription for the session's event stream.`,
      );
    if ((route.features.capabilities.resources as { subscribe?: unknown } | undefined)?.subscribe !== true)
      throw new GatewayCallError(
        ERRORS.methodNotFound,
        `Server ${route.slug} offers no resource subscriptions: resources/subscribe cannot be served for ${uri}.`,
      );
    if (uri.length > MAX_SUBSCRIBED_URI_CHARS)
      throw new GatewayCallError(ERRORS.invalidParams, `resources/subscribe params.uri is longer than ${MAX_SUBSCRIBED_URI_CHARS} characters.`);
    const current = this.of(session);
    if (!current.has(uri) && current.size >= MAX_SUBSCRIPTIONS_PER_SESSION)
      throw new GatewayCallError(
        ERRORS.invalidParams,
        `A session subscribes to at most ${MAX_SUBSCRIPTIONS_PER_SESSION} resources: unsubscribe from one before subscribing to ${uri}.`,
      );
    await this.change(session, (uris) => uris.set(uri, route.assignmentGuid));
    return done(id);
  }

  /** The session's subscriptions in this process: resource URI -> assignment guid. */
  of(session: SessionKey): Subscribed {
    return this.subscribed.get(session) ?? new Map();
  }

  /** Calls `watcher` on each change of the session's subscriptions (in this process); returns the function that stops it. */
  watch(session: SessionKey, watcher: Watcher): () => void {
    const key = sessionKeyOf(session);
    const set = this.watchers.get(key) ?? new Set();
    set.add(watcher);
    this.watchers.set(key, set);
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(key) === set) this.watchers.delete(key);
    };
  }

  /** Forgets an ended session's subscriptions; its event streams stop following its upstreams. */
  forget(session: SessionKey): void {
    this.subscribed.forget(session);
    void this.notify(session, true);
  }

  private async change(session: GatewaySession, edit: (uris: Map<string, string>) => void): Promise<void> {
    const uris = new Map(this.of(session));
    edit(uris);
    // A new map each time: an event stream that read the old one keeps a consistent view.
    if (!this.subscribed.set(session, uris))
      throw new GatewayCallError(
        ERRORS.invalidRequest,
        `This gateway process follows the subscriptions of ${REMEMBERED_SESSIONS} sessions with open event streams already: try again once one ends.`,
      );
    await this.notify(session);
  }

  /** Tells the session's event streams; waits (bounded) until their upstreams acknowledged the change. */
  private async notify(session: SessionKey, ended = false): Promise<void> {
    const watchers = [...(this.watchers.get(sessionKeyOf(session)) ?? [])];
    if (watchers.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.settleMs)));
    await Promise.race([Promise.allSettled(watchers.map((watcher) => watcher(ended))), bound]);
    clearTimeout(timer);
  }
}

const done = (id: RequestId): Outcome => ({ kind: 'answer', message: { jsonrpc: '2.0', id, result: {} } as JSONRPCMessage });
