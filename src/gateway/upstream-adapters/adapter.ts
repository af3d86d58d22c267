import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage } from '@modelcontextprotocol/server';
import type { Services } from '../../core/services.js';
import { thenDone, type HostContext } from '../call-model.js';
import type { Route, RouteCredential } from '../catalog.js';
import { HostLogLevels } from '../host-log-levels.js';
import { ParamHeaderSchemas } from '../mcp-param-headers.js';
import type { GatewaySession } from '../session-id.js';
import { upstreamTraceparent } from '../trace-context.js';
import type { UpstreamFetch } from '../upstream-client.js';
import type { UpstreamReply, UpstreamRequest } from '../upstream-http.js';

/**
 * One upstream revision and transport, spoken for the gateway: the message the
 * host sent (already routed and renamed) goes out in the upstream's revision, and
 * the upstream's messages come back as JSON-RPC messages, the answer last. Adapters
 * throw what went wrong as it is (an UpstreamHttpError, a timeout...); upstreams.ts
 * turns that into the host's error, once.
 */
export interface UpstreamAdapter {
  exchange(ctx: HostContext, route: Route, credential: RouteCredential, message: JSONRPCMessage): Promise<UpstreamExchange>;
}

/** An upstream's reply, with the revision the exchange spoke (a 2025 upstream's is the one its initialize negotiated). */
export interface UpstreamExchange extends UpstreamReply {
  protocolVersion?: string | null | undefined;
}

/** Who the host is, as a 2025 upstream's initialize is told. */
export type InitHost = Pick<GatewaySession, 'protocolVersion' | 'clientCapabilities' | 'clientInfo'>;

/** A 2025 upstream session as a host session or a request keeps it. */
export interface OpenedSession {
  sessionId?: string;
  protocolVersion?: string;
}

/** Who the gateway says the host is to an upstream when the host has no session and no envelope. */
const SESSIONLESS_HOST: InitHost = { protocolVersion: LATEST_PROTOCOL_VERSION, clientCapabilities: {}, clientInfo: { name: 'gateway-host', version: '0' } };

/** What every adapter builds its exchanges with, and what this process learned that outlives one request. */
export class UpstreamKit {
  /** Each tool's `x-mcp-header` marks, for the `Mcp-Param-*` headers a 2026-07-28 upstream checks on tools/call. */
  readonly paramSchemas = new ParamHeaderSchemas();
  /** The level each 2025 host set with logging/setLevel, for the 2026-07-28 upstreams it calls later. */
  readonly logLevels = new HostLogLevels();

  constructor(
    private readonly services: Pick<Services, 'config'>,
    private readonly fetch: UpstreamFetch,
  ) {}

  /** One HTTP exchange's settings: the route's URL and credential, the host's trace and signal, the gateway's limits. */
  request(ctx: HostContext, route: Route, credential: RouteCredential, sessionId?: string, protocolVersion?: string): UpstreamRequest {
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

  /** Who the host is, as an upstream's initialize says it: its session, a 2026-07-28 host's envelope, or nobody in particular. */
  hostOf(ctx: HostContext): InitHost {
    if (ctx.session) return ctx.session;
    if (ctx.modern) return { protocolVersion: LATEST_PROTOCOL_VERSION, ...ctx.modern.identity };
    return SESSIONLESS_HOST;
  }
}

/** A reply of one message that is already known (an answer the adapter read from an HTTP error). */
export function singleMessage(message: JSONRPCMessage, protocolVersion: string): UpstreamExchange {
  return {
    status: 200,
    sessionId: null,
    streamed: false,
    protocolVersion,
    messages: (async function* () {
      yield message;
    })(),
  };
}

/** `exchange` with `done` run once its messages have been read to the end, or the reader let go (a lease released, a session closed). */
export function whenRead(exchange: UpstreamExchange, done: () => void): UpstreamExchange {
  return { ...exchange, messages: thenDone(exchange.messages, done) };
}
