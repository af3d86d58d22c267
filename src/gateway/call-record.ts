import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/server';
import type { CallLogInput, LogType } from '../core/logs/call-log-row.js';
import { isSensitiveHeaderName, lowerCaseName, REDACTED, redactSecretValues } from '../core/redaction.js';
import type { Services } from '../core/services.js';
import type { GatewayCaller } from './access.js';
import type { GatewaySession } from './session-id.js';
import { MODERN_REVISION } from './modern-upstream.js';
import type { TraceContext } from './trace-context.js';

const TYPE_OF: Record<string, LogType> = {
  'tools/call': 'tool_call',
  'tools/list': 'tool_list',
  'resources/read': 'resource_read',
  'prompts/get': 'prompt_get',
  initialize: 'initialize',
};

/**
 * One host request's call log row, filled in as the request goes through the
 * gateway and written once it is answered. The gateway token never enters it
 * (the Authorization header is replaced before anything is kept), and the
 * credential's secrets are redacted from bodies and error text.
 */
export class CallRecord {
  private readonly startedAt = Date.now();
  private readonly started = performance.now();
  inboundServerGuid: string | null = null;
  toolName: string | null = null;
  /** Secret strings of the credential used (redacted from what is stored). */
  secrets: string[] = [];
  /** Header names of the credential used (redacted from stored headers). */
  headerNames: string[] = [];
  /**
   * The host's MCP protocol revision: its session's, 2026-07-28
   * for a host of that revision, else the revision its MCP-Protocol-Version header
   * names; an initialize's is the one its answer negotiates.
   */
  protocolVersion: string | null;
  private done = false;
  /** The host's session id, logged with the row (null without a session). */
  private readonly sessionId: string | null;
  /** The host's headers, copied as kept (see keptRequestHeaders) when the row is written: after the host's answer has gone. */
  private readonly hostHeaders: Record<string, string | string[] | undefined>;

  constructor(
    private readonly services: Pick<Services, 'callLogs' | 'logger'>,
    private readonly caller: GatewayCaller,
    private readonly trace: TraceContext,
    private readonly request: JSONRPCMessage,
    private readonly requestBytes: number,
    hostHeaders: Record<string, string | string[] | undefined>,
    /** The host's session, when it has one: its id is logged, and its negotiated revision is the host's. */
    session: Pick<GatewaySession, 'id' | 'protocolVersion'> | null,
  ) {
    this.sessionId = session?.id ?? null;
    this.hostHeaders = hostHeaders;
    const named = hostHeaders['mcp-protocol-version'];
    // A request with neither a session nor the header is of the revision the transport says to assume then.
    this.protocolVersion = session?.protocolVersion ?? (named === undefined ? ASSUMED_REVISION : knownRevision(named));
  }

  get method(): string {
    return (this.request as { method?: string }).method ?? 'response';
  }

  /** Writes the row for the final answer (a JSON-RPC response or error) and everything relayed before it. */
  finish(final: JSONRPCMessage | null, relayedBytes: number, failure?: string): void {
    if (this.done) return;
    this.done = true;
    const result = (final as { result?: { isError?: boolean; content?: { type: string; text?: string }[] } } | null)?.result;
    const error = (final as { error?: { message?: string; code?: unknown; data?: { cancelled?: unknown } } } | null)?.error;
    let errorMessage: string | null = failure ?? error?.message ?? null;
    if (!errorMessage && result?.isError) errorMessage = result.content?.find((c) => c.type === 'text')?.text?.slice(0, 1000) ?? 'the tool reported an error';
    const responseBody = final ? JSON.stringify(final) : '';
    const negotiated = this.method === 'initialize' ? knownRevision((result as { protocolVersion?: unknown } | undefined)?.protocolVersion) : null;
    const row: CallLogInput = {
      organizationGuid: this.caller.organizationGuid,
      createdAt: this.startedAt,
      type: TYPE_OF[this.method] ?? 'other',
      method: this.method,
      // The host's own words (a tool name, a resource URI) can spell the credential, as its request body can.
      toolName: this.toolName === null ? null : redactSecretValues(this.toolName, this.secrets),
      status: errorMessage === null ? 'ok' : 'error',
      errorMessage: errorMessage === null ? null : redactSecretValues(errorMessage, this.secrets),
      errorType: errorTypeOf(errorMessage, error, result),
      durationMs: performance.now() - this.started,
      requestBytes: this.requestBytes,
      responseBytes: relayedBytes + Buffer.byteLength(responseBody),
      gatewayConnectionGuid: this.caller.connectionGuid,
      userGuid: this.caller.userGuid,
      outboundGatewayGuid: this.caller.gatewayGuid,
      inboundServerGuid: this.inboundServerGuid,
      hostGuid: this.caller.hostGuid,
      teamGuid: this.caller.teamGuid,
      traceId: this.trace.traceId,
      spanId: this.trace.spanId,
      parentSpanId: this.trace.parentSpanId,
      sessionId: this.sessionId,
      protocolVersion: negotiated ?? this.protocolVersion,
      requestBody: redactSecretValues(JSON.stringify(this.request), this.secrets),
      responseBody: redactSecretValues(responseBody, this.secrets),
      // Mcp-Name repeats the tool name or resource URI, and any header can carry a token of ours: redacted like the body.
      requestHeaders: keptRequestHeaders(this.hostHeaders, this.sessionId, this.secrets),
      responseHeaders: { 'content-type': 'application/json' },
      sensitiveHeaderNames: this.headerNames,
    };
    this.services.callLogs
      .write([row])
      .catch((err: unknown) => this.services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not write a gateway call log row'));
  }
}

/**
 * The conventions' error.type of a failed call: `cancelled` for a call the host
 * cancelled (most hosts are sent no answer then), else the JSON-RPC code the host was
 * answered with, `tool_error` for a tool's isError result, `_OTHER` for an answer cut
 * short; null when the call succeeded.
 */
function errorTypeOf(
  errorMessage: string | null,
  error: { code?: unknown; data?: { cancelled?: unknown } } | undefined,
  result: { isError?: boolean } | undefined,
): string | null {
  if (errorMessage === null) return null;
  if (error?.data?.cancelled === true) return 'cancelled';
  if (typeof error?.code === 'number') return String(error.code);
  return result?.isError ? 'tool_error' : '_OTHER';
}

/** What a server assumes of a request that names no revision and has no session (Streamable HTTP, since 2025-06-18). */
const ASSUMED_REVISION = '2025-03-26';
/** The revisions a host can speak to a gateway: anything else a host names is not kept. */
const REVISIONS: ReadonlySet<unknown> = new Set([...SUPPORTED_PROTOCOL_VERSIONS, MODERN_REVISION]);
const knownRevision = (value: unknown): string | null => (REVISIONS.has(value) ? (value as string) : null);

/**
 * The host's headers as a call log keeps them: the gateway token is never among
 * them, and the sealed session id (long and opaque, about half of the headers'
 * size) is kept as the session's short id, the row's session_id; the other values
 * have the credential's secrets and our own tokens masked.
 */
function keptRequestHeaders(
  headers: Record<string, string | string[] | undefined>,
  sessionId: string | null,
  secrets: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  // Node's header object holds only its headers, as own keys: for...in walks them without an array a header.
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const lower = lowerCaseName(name);
    if (isSensitiveHeaderName(lower)) out[name] = REDACTED;
    else if (lower === 'mcp-session-id' && sessionId) out[name] = sessionId;
    else out[name] = redactSecretValues(Array.isArray(value) ? value.join(', ') : value, secrets);
  }
  return out;
}
