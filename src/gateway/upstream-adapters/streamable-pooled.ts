import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import { setUpstreamLogLevel } from '../host-log-levels.js';
import { cancelUpstreamRequest, deleteUpstreamSession, forgotSession, postToUpstream, type UpstreamReply } from '../upstream-http.js';
import { UpstreamSessionPool } from '../upstream-session-pool.js';
import { whenRead, type UpstreamAdapter, type UpstreamExchange, type UpstreamKit } from './adapter.js';
import { StandaloneRequests, type StandaloneInbox } from './standalone-requests.js';
import { openStreamable } from './streamable-session.js';

/** A signal nothing aborts. */
const NOT_CANCELLED = new AbortController().signal;
/** The abort listener of a message that is no request: nothing to cancel upstream. */
const NO_CANCEL = { handleEvent() {} };

/**
 * A 2026-07-28 host's exchange with a 2025 Streamable HTTP upstream, on the session
 * its connection shares with its other requests of the same host identity
 * (upstream-session-pool.ts): one exchange per call instead of four. The session
 * stays the request's while the request lasts (a bridged input round answers on it);
 * a session the upstream forgot (forgotSession) is opened again, once. What the upstream asks on the session's
 * own stream reaches the call in flight (standalone-requests.ts). A request the host closes
 * before its answer (its cancellation, in revision 2026-07-28) is cancelled in the
 * session with `notifications/cancelled`, as a 2025 upstream expects.
 */
export class StreamablePooledAdapter implements UpstreamAdapter {
  private readonly sessions = new UpstreamSessionPool();
  /** What the pooled sessions' upstreams ask outside a call's stream (standalone-requests.ts). */
  private readonly standalone = new StandaloneRequests();

  constructor(private readonly kit: UpstreamKit) {}

  /** Ends the pooled upstream sessions (the process is closing). */
  close(): void {
    this.sessions.close();
    this.standalone.close();
  }

  async exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage, retried = false): Promise<UpstreamExchange> {
    const modern = ctx.modern!;
    const host = this.kit.hostOf(ctx);
    const key = UpstreamSessionPool.keyOf(ctx.caller.connectionGuid, route.assignmentGuid, host);
    // The session is shared by the callers waiting on it: one host going away must not abort its opening for the others
    // (the exchange's own timeout still bounds it).
    const shared: HostContext = { ...ctx, signal: NOT_CANCELLED };
    const lease = this.sessions.acquire(
      key,
      async () => {
        const { instructions: _, ...opened } = await openStreamable(this.kit, shared, route, credential, host);
        // The host's level is part of the pool key (its identity), so a session is told one level, once, before any call.
        const level = modern.identity.logLevel;
        if (level !== undefined && route.features?.capabilities.logging !== undefined)
          await setUpstreamLogLevel(this.kit.request(shared, route, credential, opened.sessionId, opened.protocolVersion), level);
        return opened;
      },
      (session) => {
        this.standalone.stop(key);
        void deleteUpstreamSession({
          ...this.kit.request(shared, route, credential, session.sessionId, session.protocolVersion),
          signal: AbortSignal.timeout(5_000),
        });
      },
    );
    let reply: UpstreamReply;
    let protocolVersion: string | null = null;
    // A listener object, not a named closure (docs/decisions.md, "No named closure made per call on a hot path").
    let cancel: { handleEvent(): void } = NO_CANCEL;
    let inbox: StandaloneInbox | null = null;
    try {
      const upstream = await lease.session;
      modern.upstreams.set(route.assignmentGuid, upstream);
      // A host that could be asked something: the session's own stream is followed, open before the call goes out.
      if (StandaloneRequests.wanted(host.clientCapabilities)) {
        await this.standalone.follow(key, () => this.kit.request(shared, route, credential, upstream.sessionId, upstream.protocolVersion));
        if ('method' in message && 'id' in message) inbox = this.standalone.join(key);
      }
      protocolVersion = upstream.protocolVersion ?? null;
      // Listening before the request goes out: a host may close its request before the upstream's answer has begun.
      const id = (message as { id?: RequestId }).id;
      if (id !== undefined && 'method' in message) {
        const kit = this.kit;
        cancel = {
          handleEvent() {
            void cancelUpstreamRequest(
              { ...kit.request(shared, route, credential, upstream.sessionId, upstream.protocolVersion), signal: AbortSignal.timeout(5_000) },
              id,
            );
          },
        };
        ctx.signal.addEventListener('abort', cancel, { once: true });
      }
      reply = await postToUpstream(this.kit.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion), message);
    } catch (err) {
      inbox?.leave();
      ctx.signal.removeEventListener('abort', cancel);
      lease.release();
      modern.upstreams.delete(route.assignmentGuid);
      if (forgotSession(err) && !retried) {
        this.sessions.drop(key);
        this.standalone.stop(key);
        return this.exchange(ctx, route, credential, message, true);
      }
      throw err;
    }
    return whenRead({ ...reply, messages: inbox ? inbox.merged(reply.messages) : reply.messages, protocolVersion }, () => {
      ctx.signal.removeEventListener('abort', cancel);
      lease.release();
    });
  }
}
