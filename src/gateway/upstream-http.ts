import { withUpstreamTrace } from './trace-context.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { readSseEvents } from './sse.js';
import type { UpstreamFetch, UpstreamHttpResponse } from './upstream-client.js';
import type { ResponseHeaders } from '../core/alert-debug.js';

/**
 * One exchange with an upstream over MCP Streamable HTTP, with a plain HTTP client
 * (upstream-client.ts): the gateway relays messages as they are, so it needs no SDK
 * client in between.
 */
export interface UpstreamRequest {
  url: string;
  /** The identity's headers (secret), plus nothing of the host's. */
  credentialHeaders: Record<string, string>;
  sessionId?: string | undefined;
  protocolVersion?: string | undefined;
  /** Revision 2026-07-28's routing headers (Mcp-Method, Mcp-Name), which must match the body. */
  routingHeaders?: Record<string, string> | undefined;
  traceparent: string;
  tracestate?: string | null;
  /** The host's: cuts the exchange when the host goes away. */
  signal: AbortSignal;
  /** Cuts the whole exchange (a streamed answer included) after this long. */
  timeoutMs?: number | undefined;
  maxResponseBytes: number;
  fetch: UpstreamFetch;
}

export interface UpstreamReply {
  status: number;
  sessionId: string | null;
  /** True when the upstream answered with an event stream (progress, logging, server requests may come first). */
  streamed: boolean;
  messages: AsyncIterable<JSONRPCMessage>;
}

/** The upstream answered, but not with JSON-RPC: not JSON, not a message, an answer to another request, or none at all. */
export class UpstreamProtocolError extends Error {}

/**
 * One message of an upstream's answer, as JSON-RPC 2.0 requires it: a request or
 * notification (a method), or a response (an id with a result or an error); when
 * `requestId` is given, a response must be its answer. Anything else is an
 * UpstreamProtocolError: a host must never be handed something that is not an
 * answer to it (its client would wait for its own id for ever).
 */
export function upstreamMessageOf(data: string, requestId?: RequestId): JSONRPCMessage {
  const [message, ...more] = upstreamMessagesOf(data, requestId);
  if (!message || more.length > 0) throw new UpstreamProtocolError('the upstream answered something that is not a JSON-RPC 2.0 message');
  return message;
}

/** The messages of one JSON text of an upstream (a message, or a batch of them: 2025-03-26 allows batches), each checked. */
export function upstreamMessagesOf(data: string, requestId?: RequestId): JSONRPCMessage[] {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new UpstreamProtocolError('the upstream answered something that is not JSON');
  }
  return (Array.isArray(value) ? value : [value]).map((item) => checkedMessage(item, requestId));
}

function checkedMessage(value: unknown, requestId: RequestId | undefined): JSONRPCMessage {
  const m = value as Record<string, unknown> | null;
  if (m === null || typeof m !== 'object' || Array.isArray(m) || m.jsonrpc !== '2.0')
    throw new UpstreamProtocolError('the upstream answered something that is not a JSON-RPC 2.0 message');
  if (typeof m.method === 'string') return m as unknown as JSONRPCMessage;
  if (!('id' in m) || !('result' in m || 'error' in m))
    throw new UpstreamProtocolError('the upstream answered a JSON-RPC message that is neither a request nor a response');
  if (requestId !== undefined && m.id !== requestId) {
    // An error with a null id is the answer of an upstream that could not read which request it got: it answers ours.
    if (m.id === null && 'error' in m) return { ...m, id: requestId } as unknown as JSONRPCMessage;
    throw new UpstreamProtocolError(`the upstream answered another request (id ${JSON.stringify(m.id)?.slice(0, 40)}) than the one it was sent`);
  }
  return m as unknown as JSONRPCMessage;
}

/** The upstream answered with an HTTP error status. `body` is a short snippet and `headers` the answer's, neither yet redacted. */
export class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly headers: ResponseHeaders = {},
  ) {
    super(`the upstream answered HTTP ${status}`);
  }
}

/**
 * Whether an upstream's refusal of a request sent in a session says it no longer knows
 * the session: 404, as the revisions say, or 400 naming the session, as servers built on
 * the SDKs' examples answer ("Bad Request: No valid session ID provided";
 * server-everything among them).
 */
export function forgotSession(err: unknown): boolean {
  return err instanceof UpstreamHttpError && (err.status === 404 || (err.status === 400 && /session/i.test(err.body)));
}

const headersFor = (req: UpstreamRequest, accept: string): Record<string, string> => ({
  ...req.credentialHeaders,
  accept,
  traceparent: req.traceparent,
  ...(req.tracestate ? { tracestate: req.tracestate } : {}),
  ...(req.sessionId ? { 'mcp-session-id': req.sessionId } : {}),
  ...(req.protocolVersion ? { 'mcp-protocol-version': req.protocolVersion } : {}),
  ...req.routingHeaders,
});

async function* parseMessages(text: string, requestId?: RequestId): AsyncGenerator<JSONRPCMessage> {
  if (text.trim()) yield* upstreamMessagesOf(text, requestId);
}

/** How often one request's stream is resumed before the gateway gives up on it. */
const MAX_RESUMES = 10;
/** The longest `retry` the gateway honours before resuming (an upstream cannot park a call for minutes). */
const MAX_RETRY_MS = 5_000;

const isAnswerOf = (id: RequestId, message: JSONRPCMessage): boolean =>
  (message as { id?: RequestId }).id === id && ('result' in message || 'error' in message);

/**
 * The messages of an upstream's event stream. When the stream of a request ends
 * before its answer (MCP's SSE polling: the server closes, the client comes back with
 * Last-Event-ID), the gateway resumes it with a GET carrying the last event id, after
 * the `retry` the upstream asked for, until the answer comes or MAX_RESUMES.
 */
async function* sseMessages(req: UpstreamRequest, first: UpstreamHttpResponse, requestId: RequestId | undefined): AsyncGenerator<JSONRPCMessage> {
  let res = first;
  let lastEventId: string | undefined;
  let retryMs = 0;
  for (let resumes = 0; ; resumes++) {
    let answered = false;
    for await (const event of readSseEvents(res.chunks(req.maxResponseBytes))) {
      if (event.id !== undefined) lastEventId = event.id;
      if (event.retry !== undefined) retryMs = event.retry;
      if (event.event !== 'message' || !event.data.trim()) continue;
      for (const message of upstreamMessagesOf(event.data, requestId)) {
        if (requestId !== undefined && isAnswerOf(requestId, message)) answered = true;
        yield message;
      }
    }
    if (answered || requestId === undefined || lastEventId === undefined || resumes >= MAX_RESUMES || req.signal.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(retryMs, MAX_RETRY_MS)));
    res = await req.fetch(req.url, {
      method: 'GET',
      headers: { ...headersFor(req, 'text/event-stream'), 'last-event-id': lastEventId },
      signal: req.signal,
      timeoutMs: req.timeoutMs,
    });
    if (!res.ok) throw await failure(res);
  }
}

async function failure(res: UpstreamHttpResponse): Promise<UpstreamHttpError> {
  const body = await res.text(4096).catch(() => '');
  return new UpstreamHttpError(res.status, body.slice(0, 1000), res.headers());
}

/** POSTs one JSON-RPC message; the reply's messages end with the response (none for a notification or response). */
export async function postToUpstream(req: UpstreamRequest, message: JSONRPCMessage): Promise<UpstreamReply> {
  const res = await req.fetch(req.url, {
    method: 'POST',
    headers: { ...headersFor(req, 'application/json, text/event-stream'), 'content-type': 'application/json' },
    body: JSON.stringify(withUpstreamTrace(message, req.traceparent, req.tracestate)),
    signal: req.signal,
    timeoutMs: req.timeoutMs,
  });
  const sessionId = res.header('mcp-session-id');
  if (res.status === 202 || res.status === 204) {
    res.discard();
    return { status: res.status, sessionId, streamed: false, messages: parseMessages('') };
  }
  if (!res.ok) throw await failure(res);
  const type = res.header('content-type') ?? '';
  if (type.includes('text/event-stream'))
    return {
      status: res.status,
      sessionId,
      streamed: true,
      messages: sseMessages({ ...req, sessionId: sessionId ?? req.sessionId }, res, (message as { id?: RequestId }).id),
    };
  const text = await res.text(req.maxResponseBytes);
  return { status: res.status, sessionId, streamed: false, messages: parseMessages(text, (message as { id?: RequestId }).id) };
}

/**
 * Opens the upstream's standalone event stream (GET); null when the upstream offers
 * none (405). A session the upstream forgot is its refusal, as for a POST (forgotSession).
 */
export async function openUpstreamStream(req: UpstreamRequest): Promise<AsyncIterable<JSONRPCMessage> | null> {
  const res = await req.fetch(req.url, { method: 'GET', headers: headersFor(req, 'text/event-stream'), signal: req.signal, timeoutMs: req.timeoutMs });
  if (res.status === 405) {
    res.discard();
    return null;
  }
  if (!res.ok) throw await failure(res);
  return sseMessages({ ...req, maxResponseBytes: Number.MAX_SAFE_INTEGER }, res, undefined);
}

/** Ends an upstream session (DELETE); failures are ignored, the upstream expires it anyway. */
export async function deleteUpstreamSession(req: UpstreamRequest): Promise<void> {
  if (!req.sessionId) return;
  const res = await req
    .fetch(req.url, { method: 'DELETE', headers: headersFor(req, 'application/json'), signal: req.signal, timeoutMs: req.timeoutMs })
    .catch(() => null);
  res?.discard();
}

/**
 * Tells a 2025 upstream that the request `id` of the session is cancelled
 * (`notifications/cancelled`): its transport does not count a closed request as one.
 * Never throws: an upstream that does not take it goes on with the call, as it would.
 */
export async function cancelUpstreamRequest(req: UpstreamRequest, id: RequestId): Promise<void> {
  const message = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'The host cancelled the request.' } };
  await tellUpstream(req, message as JSONRPCMessage);
}

/**
 * Sends a notification or an answer in an upstream session and reads what comes back
 * to its end. Never throws: a session gone, nobody waits for it.
 */
export async function tellUpstream(req: UpstreamRequest, message: JSONRPCMessage): Promise<void> {
  try {
    for await (const _ of (await postToUpstream(req, message)).messages) void _;
  } catch {
    /* see above */
  }
}

/** What a host says of itself in `initialize`, passed on to the upstream. */
export interface InitializeParams {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  clientInfo: { name: string; version: string };
}

/**
 * Opens a session with a 2025 upstream over Streamable HTTP: `initialize`, then
 * `notifications/initialized` in the session the upstream gave (none when it is
 * stateless). Returns the session and the initialize result.
 */
export async function initializeUpstream(
  req: UpstreamRequest,
  params: InitializeParams,
): Promise<{ sessionId: string | null; protocolVersion: string | null; result: Record<string, unknown> }> {
  const reply = await postToUpstream(req, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { ...params } } as JSONRPCMessage);
  type InitializeAnswer = { result?: Record<string, unknown>; error?: { message?: string } };
  let response: InitializeAnswer | null = null;
  for await (const msg of reply.messages) if ((msg as { id?: unknown }).id === 0) response = msg as InitializeAnswer;
  if (!response) throw new UpstreamProtocolError('the upstream gave no answer to initialize');
  if (!response.result) throw new Error(response.error?.message ?? 'the upstream gave no initialize result');
  const protocolVersion = typeof response.result.protocolVersion === 'string' ? response.result.protocolVersion : null;
  await postToUpstream({ ...req, sessionId: reply.sessionId ?? undefined, protocolVersion: protocolVersion ?? undefined }, {
    jsonrpc: '2.0',
    method: 'notifications/initialized',
  } as JSONRPCMessage);
  return { sessionId: reply.sessionId, protocolVersion, result: response.result };
}
