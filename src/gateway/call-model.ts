import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import type { GatewayCaller } from './access.js';
import type { CallRecord } from './call-record.js';
import type { Catalog } from './catalog.js';
import type { HostIdentity } from './modern-upstream.js';
import type { GatewaySession } from './session-id.js';
import type { TraceContext } from './trace-context.js';

/**
 * The one internal model every host revision and every upstream revision translates
 * to and from: a host's message with its context in, an Outcome out. Host-side code
 * (routes.ts, legacy-routes.ts, bridge-held-calls.ts) builds the context and renders
 * the reply; upstream adapters (upstream-adapters/) speak one upstream revision each.
 */

/** JSON-RPC error codes the gateway answers with. */
export const ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  upstream: -32000,
  rateLimited: -32029,
  sessionNotFound: -32001,
  /** Revision 2026-07-28: the Mcp-* headers and the body disagree. */
  headerMismatch: -32020,
  /** Revision 2026-07-28: the request needs a client capability the host did not declare. */
  missingClientCapability: -32021,
  /** Revision 2026-07-28: the server does not speak the request's revision. */
  unsupportedProtocolVersion: -32022,
} as const;

export const GATEWAY_VERSION = '1.0.0';
/** What a gateway offers a host, in every revision: everything a later assignment could bring; lists say what exists now. */
export const GATEWAY_CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  completions: {},
  logging: {},
};

/** Everything one host request is served with. */
export interface HostContext {
  caller: GatewayCaller;
  catalog: Catalog;
  /** The host's session (null for a request sent without one). */
  session: GatewaySession | null;
  trace: TraceContext;
  /** Aborted when the host goes away. */
  signal: AbortSignal;
  record: CallRecord;
  /** Set for a 2026-07-28 host (bridge-held-calls.ts); absent for a 2025 host. */
  modern?: ModernHostContext;
  /**
   * The host's session lives in this process and may change (the legacy HTTP+SSE
   * transport's, tied to its stream): an upstream session the upstream forgot is opened
   * again in it, where a Streamable HTTP host, whose session is sealed in its id, is
   * told to initialize again (404).
   */
  renewsUpstreamSessions?: boolean;
}

/** A 2026-07-28 host's request: no session, the host's identity from its envelope. */
export interface ModernHostContext {
  identity: HostIdentity;
  /**
   * The upstream sessions opened for this request alone, while they are open: the
   * host's answers to a 2025 upstream's requests go back into the same session.
   */
  upstreams: Map<string, { sessionId?: string; protocolVersion?: string }>;
}

/**
 * What the dispatcher decided for one host message, with what the call log needs.
 * It writes no row itself: settle() (call-outcome.ts) does, once per request.
 */
export type Outcome =
  /** One JSON-RPC answer; `failure` is what the row says when it differs from the answer (a refusal's reason). */
  | { kind: 'answer'; message: JSONRPCMessage; newSession?: GatewaySession; failure?: string | undefined }
  /** Messages for the host, the answer to `requestId` last (anything after it is not the host's). */
  | { kind: 'stream'; requestId: RequestId; messages: AsyncIterable<JSONRPCMessage> }
  /** Nothing to answer. `logged`: the message makes a row (a host's answer to an upstream), with `failure` when it was not delivered. */
  | { kind: 'accepted'; logged?: { failure?: string | undefined } }
  /** The session names an upstream session that no longer exists: the host must initialize again. */
  | { kind: 'session-expired' }
  /** A call that ends with nothing more for the host (a held call it did not come back for): the row says why. */
  | { kind: 'ended'; failure: string };

/** What the host gets back for one POSTed message. */
export type HostReply =
  | { kind: 'accepted' }
  | { kind: 'json'; message: JSONRPCMessage; status?: number; newSession?: GatewaySession }
  | { kind: 'stream'; messages: AsyncIterable<JSONRPCMessage> }
  /** The session names an upstream session that no longer exists: the host must initialize again (HTTP 404). */
  | { kind: 'session-expired' };

/** A failure to be answered as a JSON-RPC error, with what the call log should say. */
export class GatewayCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
    /** What the call log says when it differs from what the host is told (a refusal's reason). */
    readonly logMessage?: string,
    /** An upstream's failure without the server's name, for a list naming several (Upstreams.describe). */
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** The host's session names an upstream session the upstream no longer knows (HTTP 404 in it). */
export class SessionExpired extends Error {}

export const errorResponse = (id: RequestId, code: number, message: string, data?: Record<string, unknown>): JSONRPCMessage =>
  ({ jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } }) as JSONRPCMessage;

/** `messages`, with `done` run once they have been read to the end or the reader let go of them. */
export async function* thenDone(messages: AsyncIterable<JSONRPCMessage>, done: () => void): AsyncGenerator<JSONRPCMessage> {
  try {
    yield* messages;
  } finally {
    done();
  }
}
