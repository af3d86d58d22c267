import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { AppError } from '../core/errors.js';
import { redactSecretValues } from '../core/redaction.js';
import { rememberProtocolVersion } from '../core/servers/learned-revision.js';
import { OAuthRefreshError } from '../core/servers/oauth-refresh.js';
import { SecretKeyMismatchError } from '../core/secrets/envelope.js';
import type { Services } from '../core/services.js';
import { ERRORS, GatewayCallError, SessionExpired, type HostContext } from './call-model.js';
import type { Catalog, Catalogs, Route, RouteCredential } from './catalog.js';
import type { GatewaySession } from './session-id.js';
import { upstreamTraceparent, type TraceContext } from './trace-context.js';
import { withoutEchoedSecretsIn } from './echoed-secrets.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { ResponseTooLargeError, type UpstreamFetch } from './upstream-client.js';
import type { UpstreamHealth } from './upstream-health.js';
import { deleteUpstreamSession, UpstreamHttpError, UpstreamProtocolError, type UpstreamReply } from './upstream-http.js';
import { refusesRevision } from './upstream-revision.js';
import { UpstreamKit, type InitHost, type OpenedSession, type UpstreamAdapter, type UpstreamExchange } from './upstream-adapters/adapter.js';
import { LegacySseAdapter } from './upstream-adapters/legacy-sse.js';
import { ModernAdapter } from './upstream-adapters/modern.js';
import { StreamablePooledAdapter } from './upstream-adapters/streamable-pooled.js';
import { openStreamable, StreamableSessionAdapter } from './upstream-adapters/streamable-session.js';

/**
 * The upstream side of the gateway: picks the adapter for a route (its transport,
 * the revision learned for it, and whether the host has a session), adds the
 * credential, keeps echoed secrets from the host, and turns an upstream's failure
 * into the host's error once. A route that refuses the revision it was learned in
 * is tried once in the other, and the revision it answered in is remembered with
 * its features (core/servers/learned-revision.ts) for later calls and other replicas.
 */
export class Upstreams {
  /** What the adapters share; the dispatcher feeds what it learns on the way into it (tool lists, log levels). */
  readonly kit: UpstreamKit;
  private readonly legacy: LegacySseAdapter;
  private readonly modern: ModernAdapter;
  private readonly session: StreamableSessionAdapter;
  private readonly pooled: StreamablePooledAdapter;

  constructor(
    private readonly services: Pick<Services, 'config' | 'logger' | 'db' | 'configChanges'>,
    private readonly catalogs: Catalogs,
    private readonly health: UpstreamHealth,
    private readonly fetch: UpstreamFetch,
  ) {
    this.kit = new UpstreamKit(services, fetch);
    this.legacy = new LegacySseAdapter(this.kit);
    this.modern = new ModernAdapter(this.kit);
    this.session = new StreamableSessionAdapter(this.kit);
    this.pooled = new StreamablePooledAdapter(this.kit);
  }

  /** Ends the pooled upstream sessions (the process is closing). */
  close(): void {
    this.pooled.close();
  }

  /** One message to one upstream, in the revision and transport it speaks; every message back passes without the credential. */
  async send(ctx: HostContext, route: Route, message: JSONRPCMessage): Promise<UpstreamReply> {
    const credential = await this.credential(route);
    ctx.record.secrets.push(...credential.secrets);
    ctx.record.headerNames.push(...credential.headerNames);
    const reply = await this.exchange(ctx, route, credential, message);
    // Every message of every upstream transport passes here on its way to the host (answers, streams, lists, errors):
    // a credential the upstream echoes goes no further.
    return credential.secrets.length > 0 ? { ...reply, messages: withoutEchoedSecretsIn(reply.messages, credential.secrets) } : reply;
  }

  /**
   * Opens the upstream for a 2025 host's session (its initialize): the session to
   * keep (none for a legacy upstream, whose sessions end with their streams) and the
   * instructions, without the credential. Null for an upstream found to speak
   * 2026-07-28 after all: it has no session to open.
   */
  async open(ctx: HostContext, route: Route, host: InitHost): Promise<(OpenedSession & { instructions: string | null }) | null> {
    const credential = await this.credential(route);
    // Instructions reach the host: whatever of the credential an upstream put in them is not relayed.
    const instructionsOf = (value: unknown) => (typeof value === 'string' ? redactSecretValues(value, credential.secrets) : null);
    if (route.transport === 'sse') return { instructions: instructionsOf((await this.legacy.open(ctx, route, credential, host)).instructions) };
    try {
      const { instructions, ...session } = await openStreamable(this.kit, ctx, route, credential, host);
      return { ...session, instructions: instructionsOf(instructions) };
    } catch (err) {
      if (refusesRevision(err, revisionOf(route)) && (await this.modern.speaksModern(ctx, route, credential))) {
        await this.remember(ctx, route, MODERN_REVISION);
        return null;
      }
      throw err;
    }
  }

  /**
   * Opens a 2025 Streamable HTTP session for a 2026-07-28 host's task (a 2025-11-25 task
   * lives in the session it was created in): its own, so no other call's session ending
   * ends the task. This process ends it (DELETE) when told to by `endAfter`, the task's
   * time to live; a process that closes first leaves it to the upstream, since other
   * replicas may still serve the task.
   */
  async openTaskSession(ctx: HostContext, route: Route): Promise<{ session: OpenedSession; endAfter(ms: number): void }> {
    const credential = await this.credential(route);
    const { instructions: _, ...session } = await openStreamable(this.kit, ctx, route, credential, this.kit.hostOf(ctx));
    // Made now, so a timer keeps this small object rather than the whole request context.
    const closing = this.kit.request(ctx, route, credential, session.sessionId, session.protocolVersion);
    const end = () =>
      void this.credential(route).then((current) =>
        deleteUpstreamSession({ ...closing, credentialHeaders: current.headers, signal: AbortSignal.timeout(5_000) }),
      );
    let timer: NodeJS.Timeout | undefined;
    return {
      session,
      endAfter(ms) {
        clearTimeout(timer);
        timer = setTimeout(end, ms);
        timer.unref();
      },
    };
  }

  async credential(route: Route): Promise<RouteCredential> {
    try {
      return await this.catalogs.credential(route);
    } catch (err) {
      if (err instanceof OAuthRefreshError)
        throw new GatewayCallError(ERRORS.upstream, `Server ${route.slug}: ${err.message}`, undefined, undefined, err.message);
      throw err;
    }
  }

  /** Ends a host session's upstream sessions (DELETE); failures are ignored, the upstreams expire them anyway. */
  async endSessions(session: GatewaySession, catalog: Catalog, trace: TraceContext): Promise<void> {
    await Promise.all(
      catalog.routes.map(async (route) => {
        const upstream = session.upstreams[route.assignmentGuid];
        if (!upstream?.sessionId) return;
        const credential = await this.catalogs.credential(route).catch(() => null);
        if (!credential) return;
        await deleteUpstreamSession({
          url: route.url,
          credentialHeaders: credential.headers,
          sessionId: upstream.sessionId,
          protocolVersion: upstream.protocolVersion,
          traceparent: upstreamTraceparent(trace),
          signal: AbortSignal.timeout(5_000),
          maxResponseBytes: 4096,
          fetch: this.fetch,
        });
      }),
    );
  }

  /** The adapter for a route: the legacy transport, the revision learned for it, a 2026-07-28 host's pooled or held 2025 session. */
  private adapterFor(ctx: HostContext, route: Route, revision: string): UpstreamAdapter {
    if (route.transport === 'sse') return this.legacy;
    if (revision === MODERN_REVISION) return this.modern;
    return ctx.modern && !ctx.modern.upstreams.has(route.assignmentGuid) ? this.pooled : this.session;
  }

  private async exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamExchange> {
    const revision = revisionOf(route);
    try {
      return await this.adapterFor(ctx, route, revision).exchange(ctx, route, credential, message);
    } catch (err) {
      if (err instanceof SessionExpired || err instanceof GatewayCallError) throw err;
      const isRequest = 'method' in message && 'id' in message;
      if (isRequest && route.transport !== 'sse' && refusesRevision(err, revision)) {
        const other = await this.inOtherRevision(ctx, route, credential, message, revision).catch(() => null);
        if (other) return other;
      }
      throw this.failed(ctx, route, message, err);
    }
  }

  /** The message once more in the revision the route was not learned in; null when the upstream does not speak that either. */
  private async inOtherRevision(
    ctx: HostContext,
    route: Route,
    credential: RouteCredential,
    message: JSONRPCMessage,
    refused: string,
  ): Promise<UpstreamExchange | null> {
    if (refused === MODERN_REVISION) {
      const reply = await this.adapterFor(ctx, route, LATEST_PROTOCOL_VERSION).exchange(ctx, route, credential, message);
      // What the upstream negotiated is kept only if it names a revision the gateway speaks.
      const negotiated = reply.protocolVersion;
      await this.remember(ctx, route, negotiated && SUPPORTED_PROTOCOL_VERSIONS.includes(negotiated) ? negotiated : LATEST_PROTOCOL_VERSION);
      return reply;
    }
    // Learned as feature-learning learns it: server/discover first.
    if (!(await this.modern.speaksModern(ctx, route, credential))) return null;
    await this.remember(ctx, route, MODERN_REVISION);
    return this.modern.exchange(ctx, route, credential, message);
  }

  private async remember(ctx: HostContext, route: Route, protocolVersion: string): Promise<void> {
    try {
      const changed = await rememberProtocolVersion(
        this.services,
        { organizationGuid: ctx.caller.organizationGuid, serverGuid: route.serverGuid },
        protocolVersion,
      );
      if (changed) this.services.logger.info({ inboundServerGuid: route.serverGuid, protocolVersion }, 'an upstream now speaks another protocol revision');
    } catch (err) {
      // The call goes on: the next call that meets the refusal learns it again.
      this.services.logger.warn(
        { inboundServerGuid: route.serverGuid, err: err instanceof Error ? err.message : String(err) },
        'could not remember a revision',
      );
    }
  }

  /** Turns an upstream failure into the host's error, forgetting a refused credential and feeding the alerts. */
  failed(ctx: HostContext, route: Route, message: JSONRPCMessage, err: unknown): GatewayCallError {
    if (err instanceof GatewayCallError) return err;
    // Cut short by the host (a cancellation, a session-less host gone): the upstream did not fail, nothing to alert on.
    if (ctx.signal.aborted)
      return new GatewayCallError(ERRORS.upstream, `The call to server ${route.slug} was cancelled: ${cancellationOf(ctx.signal)}`, {
        inboundServerGuid: route.serverGuid,
        cancelled: true,
      });
    const status = err instanceof UpstreamHttpError ? err.status : undefined;
    if (status === 401 || status === 403) this.catalogs.forgetCredential(route);
    // The upstream refused this request as malformed: the host's doing, not the upstream failing (no alert), in its words.
    if (err instanceof UpstreamHttpError && REFUSED_REQUEST.has(err.status)) {
      const said = redactSecretValues(jsonRpcErrorMessage(err.body) ?? `HTTP ${err.status}`, ctx.record.secrets);
      return new GatewayCallError(ERRORS.invalidRequest, `Server ${route.slug} refused the request: ${said}`, {
        inboundServerGuid: route.serverGuid,
        upstreamStatus: err.status,
      });
    }
    const reason = this.describe(route, err);
    this.health.failed(ctx.caller, route, {
      status,
      ...(err instanceof UpstreamHttpError ? { headers: err.headers, body: err.body } : {}),
      reason,
      method: (message as { method?: string }).method ?? 'response',
      secrets: ctx.record.secrets,
      headerNames: ctx.record.headerNames,
      traceId: ctx.trace.traceId,
    });
    return new GatewayCallError(
      ERRORS.upstream,
      `Server ${route.slug} failed: ${reason}`,
      { inboundServerGuid: route.serverGuid, ...(status ? { upstreamStatus: status } : {}) },
      undefined,
      reason,
    );
  }

  /** Notes an upstream's answer for alerting (a JSON-RPC internal error counts as a failure). */
  observe(ctx: HostContext, route: Route, request: JSONRPCMessage, final: JSONRPCMessage): void {
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

  /** A short reason for an upstream failure, without secrets. */
  describe(route: Route, err: unknown): string {
    if (err instanceof UpstreamHttpError)
      return err.status === 401 || err.status === 403
        ? `the upstream refused the gateway's credentials (HTTP ${err.status})`
        : `the upstream answered HTTP ${err.status}`;
    if (err instanceof ResponseTooLargeError) return `the answer exceeded the limit of ${err.limit} bytes`;
    if (err instanceof UpstreamProtocolError) return err.message;
    // The credential could not be opened (not the upstream's doing): said as such, the record's id and key id left out.
    if (err instanceof SecretKeyMismatchError)
      return "the credential cannot be decrypted: it was sealed with a key that is neither SECRET_KEY nor a PREVIOUS_SECRET_KEY (see the README's key rotation)";
    if (err instanceof AppError) return err.message;
    // Already the host's error (a credential that could not be refreshed, an upstream's failure): its reason, without the server's name.
    if (err instanceof GatewayCallError) return err.reason ?? err.message;
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (e?.name === 'TimeoutError') return `no answer within ${this.services.config.gateway.upstreamTimeoutMs} ms`;
    if (e?.name === 'AbortError') return 'the request was cancelled';
    const cause = e?.cause?.code ?? e?.cause?.message;
    return `could not reach ${new URL(route.url).host}${cause ? ` (${cause})` : ''}`;
  }
}

/** HTTP statuses by which an upstream refuses the request itself (malformed, too large, of a type it does not take). */
const REFUSED_REQUEST: ReadonlySet<number> = new Set([400, 413, 415, 422]);

/** The message of a JSON-RPC error in an upstream's body, if it is one (cut to 300 characters). */
function jsonRpcErrorMessage(body: string): string | null {
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' && message !== '' ? message.slice(0, 300) : null;
  } catch {
    return null;
  }
}

/** The revision a route was learned in: 2026-07-28, or a 2025 one (unknown counts as 2025: initialize is how a session starts). */
const revisionOf = (route: Route): string => route.features?.protocolVersion ?? LATEST_PROTOCOL_VERSION;

/** Why a host's request was cut short, in words: the abort's own reason when it gave one. */
function cancellationOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name !== 'AbortError' ? reason.message : 'the host went away or cancelled the request';
}
