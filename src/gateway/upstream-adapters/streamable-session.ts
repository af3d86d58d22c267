import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { SessionExpired, type HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import type { GatewaySession } from '../session-id.js';
import { deleteUpstreamSession, forgotSession, initializeUpstream, postToUpstream, type UpstreamRequest } from '../upstream-http.js';
import { whenRead, type InitHost, type OpenedSession, type UpstreamAdapter, type UpstreamExchange, type UpstreamKit } from './adapter.js';

/** Opens a session with a 2025 Streamable HTTP upstream (initialize, initialized) for `host`. */
export function openStreamable(
  kit: UpstreamKit,
  ctx: HostContext,
  route: Route,
  credential: RouteCredential,
  host: InitHost,
): Promise<OpenedSession & { instructions: unknown }> {
  return initializeStreamable(kit.request(ctx, route, credential), host);
}

/** Opens a session with a 2025 Streamable HTTP upstream with `req`'s settings, for `host`. */
export async function initializeStreamable(req: UpstreamRequest, host: InitHost): Promise<OpenedSession & { instructions: unknown }> {
  const opened = await initializeUpstream(req, {
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

/** The renewals under way, by host session id and assignment. */
const renewals = new Map<string, Promise<OpenedSession>>();

/**
 * Replaces, in a host session this process may change (the legacy transport's), the
 * upstream session `forgotten` that the upstream no longer knows by one `open` makes:
 * once, however many of the session's calls and its event stream find it gone at the
 * same time; one that finds it replaced already gets the replacement.
 */
export function renewUpstreamSession(
  session: GatewaySession,
  assignmentGuid: string,
  forgotten: string | undefined,
  open: () => Promise<OpenedSession & { instructions?: unknown }>,
): Promise<OpenedSession> {
  const current = session.upstreams[assignmentGuid];
  if (current && current.sessionId !== forgotten) return Promise.resolve(current);
  const key = `${session.id}\0${assignmentGuid}`;
  let renewal = renewals.get(key);
  if (!renewal) {
    renewal = open()
      .then(({ instructions: _, ...opened }) => (session.upstreams[assignmentGuid] = opened))
      .finally(() => renewals.delete(key));
    renewals.set(key, renewal);
  }
  return renewal;
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
      if (ctx.renewsUpstreamSessions && ctx.session && !renewed) return this.renewed(ctx, ctx.session, route, credential, message, upstream.sessionId);
      throw new SessionExpired();
    }
  }

  /**
   * The exchange again in a new upstream session of the host's, the one the upstream
   * forgot replaced in it (a legacy SSE host's session is this process's to change).
   * The upstream hears the host as at its initialize; what it kept of the former
   * session (a log level, subscriptions) is gone with it, as after any restart.
   */
  private async renewed(
    ctx: HostContext,
    session: GatewaySession,
    route: Route,
    credential: RouteCredential,
    message: JSONRPCMessage,
    forgotten: string,
  ): Promise<UpstreamExchange> {
    await renewUpstreamSession(session, route.assignmentGuid, forgotten, () => openStreamable(this.kit, ctx, route, credential, session));
    return this.exchange(ctx, route, credential, message, true);
  }

  /** Ends an upstream session opened for one request (and forgets it, so a later exchange of the request opens its own). */
  private closeTransient(ctx: HostContext, route: Route, credential: RouteCredential, upstream: OpenedSession): void {
    if (ctx.modern?.upstreams.get(route.assignmentGuid) === upstream) ctx.modern.upstreams.delete(route.assignmentGuid);
    const closeAfter = this.kit.request(ctx, route, credential, upstream.sessionId, upstream.protocolVersion);
    void deleteUpstreamSession({ ...closeAfter, signal: AbortSignal.timeout(5_000) });
  }
}
