import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { SessionExpired, type HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import { deleteUpstreamSession, forgotSession, initializeUpstream, postToUpstream } from '../upstream-http.js';
import { whenRead, type InitHost, type OpenedSession, type UpstreamAdapter, type UpstreamExchange, type UpstreamKit } from './adapter.js';

/** Opens a session with a 2025 Streamable HTTP upstream (initialize, initialized) for `host`. */
export async function openStreamable(
  kit: UpstreamKit,
  ctx: HostContext,
  route: Route,
  credential: RouteCredential,
  host: InitHost,
): Promise<OpenedSession & { instructions: unknown }> {
  const opened = await initializeUpstream(kit.request(ctx, route, credential), {
    protocolVersion: host.protocolVersion,
    capabilities: host.clientCapabilities,
    clientInfo: host.clientInfo,
  });
  return {
    ...(opened.sessionId ? { sessionId: opened.sessionId } : {}),
    ...(opened.protocolVersion ? { protocolVersion: opened.protocolVersion } : {}),
    instructions: opened.result.instructions,
  };
}

/**
 * A 2025 Streamable HTTP upstream within the host's session: the upstream session
 * opened at the host's initialize (or held by a 2026-07-28 host's request), or, for
 * an upstream the session does not know (assigned later, or a request sent without a
 * session), one opened for this request and closed after it. An upstream that forgot
 * the host's session (forgotSession) has the host initialize again, or, for a host
 * whose session this process may change (the legacy transport's), gets a new one.
 */
export class StreamableSessionAdapter implements UpstreamAdapter {
  constructor(private readonly kit: UpstreamKit) {}

  async exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage, renewed = false): Promise<UpstreamExchange> {
    const held = ctx.modern?.upstreams;
    let upstream: OpenedSession | undefined = ctx.session?.upstreams[route.assignmentGuid] ?? held?.get(route.assignmentGuid);
    let transient = false;
    try {
      if (!upstream) {
        const { instructions: _, ...opened } = await openStreamable(this.kit, ctx, route, credential, this.kit.hostOf(ctx));
        upstream = opened;
        transient = Boolean(opened.sessionId);
        if (transient) held?.set(route.assignmentGuid, upstream);
      }
      const session = upstream;
      const reply = await postToUpstream(this.kit.request(ctx, route, credential, session.sessionId, session.protocolVersion), message).catch(
        (err: unknown) => {
          if (transient) this.closeTransient(ctx, route, credential, session);
          throw err;
        },
      );
      const protocolVersion = session.protocolVersion ?? null;
      if (!transient) return { ...reply, protocolVersion };
      return whenRead({ ...reply, protocolVersion }, () => this.closeTransient(ctx, route, credential, session));
    } catch (err) {
      if (!forgotSession(err) || !upstream?.sessionId || transient) throw err;
      if (ctx.renewsUpstreamSessions && ctx.session && !renewed) return this.renewed(ctx, route, credential, message);
      throw new SessionExpired();
    }
  }

  /**
   * The exchange again in a new upstream session of the host's, the one the upstream
   * forgot replaced in it (a legacy SSE host's session is this process's to change).
   * The upstream hears the host as at its initialize; what it kept of the former
   * session (a log level, subscriptions) is gone with it, as after any restart.
   */
  private async renewed(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamExchange> {
    const session = ctx.session!;
    const { instructions: _, ...opened } = await openStreamable(this.kit, ctx, route, credential, session);
    session.upstreams[route.assignmentGuid] = opened;
    return this.exchange(ctx, route, credential, message, true);
  }

  /** Ends an upstream session opened for one request (and forgets it, so a later exchange of the request opens its own). */
  private closeTransient(ctx: HostContext, route: Route, credential: RouteCredential, upstream: OpenedSession): void {
    if (ctx.modern?.upstreams.get(route.assignmentGuid) === upstream) ctx.modern.upstreams.delete(route.assignmentGuid);
    const closeAfter = this.kit.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion);
    void deleteUpstreamSession({ ...closeAfter, signal: AbortSignal.timeout(5_000) });
  }
}
