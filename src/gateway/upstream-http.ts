import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { chunksWithin, readSseEvents } from './sse.js';

/**
 * One exchange with an upstream over MCP Streamable HTTP, with plain fetch: the
 * gateway relays messages as they are, so it needs no SDK client in between.
 */
export interface UpstreamRequest {
  url: string;
  /** The identity's headers (secret), plus nothing of the host's. */
  credentialHeaders: Record<string, string>;
  sessionId?: string | undefined;
  protocolVersion?: string | undefined;
  traceparent: string;
  tracestate?: string | null;
  signal: AbortSignal;
  maxResponseBytes: number;
  fetch: typeof fetch;
}

export interface UpstreamReply {
  status: number;
  sessionId: string | null;
  /** True when the upstream answered with an event stream (progress, logging, server requests may come first). */
  streamed: boolean;
  messages: AsyncIterable<JSONRPCMessage>;
}

/** The upstream answered with an HTTP error status. `body` is a short snippet, not yet redacted. */
export class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`the upstream answered HTTP ${status}`);
  }
}

const headersFor = (req: UpstreamRequest, accept: string): Record<string, string> => ({
  ...req.credentialHeaders,
  accept,
  traceparent: req.traceparent,
  ...(req.tracestate ? { tracestate: req.tracestate } : {}),
  ...(req.sessionId ? { 'mcp-session-id': req.sessionId } : {}),
  ...(req.protocolVersion ? { 'mcp-protocol-version': req.protocolVersion } : {}),
});

async function readLimited(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string> {
  if (!body) return '';
  const chunks: Uint8Array[] = [];
  for await (const value of chunksWithin(body, maxBytes)) chunks.push(value);
  return Buffer.concat(chunks).toString('utf8');
}

async function* parseMessages(text: string): AsyncGenerator<JSONRPCMessage> {
  if (!text.trim()) return;
  const parsed = JSON.parse(text) as JSONRPCMessage | JSONRPCMessage[];
  if (Array.isArray(parsed)) yield* parsed;
  else yield parsed;
}

async function* sseMessages(body: ReadableStream<Uint8Array>, maxBytes: number): AsyncGenerator<JSONRPCMessage> {
  for await (const event of readSseEvents(body, maxBytes)) {
    if (event.event !== 'message' || !event.data.trim()) continue;
    yield JSON.parse(event.data) as JSONRPCMessage;
  }
}

async function failure(res: Response): Promise<UpstreamHttpError> {
  const body = await readLimited(res.body, 4096).catch(() => '');
  return new UpstreamHttpError(res.status, body.slice(0, 1000));
}

/** POSTs one JSON-RPC message; the reply's messages end with the response (none for a notification or response). */
export async function postToUpstream(req: UpstreamRequest, message: JSONRPCMessage): Promise<UpstreamReply> {
  const res = await req.fetch(req.url, {
    method: 'POST',
    headers: { ...headersFor(req, 'application/json, text/event-stream'), 'content-type': 'application/json' },
    body: JSON.stringify(message),
    signal: req.signal,
  });
  const sessionId = res.headers.get('mcp-session-id');
  if (res.status === 202 || res.status === 204) {
    await res.body?.cancel().catch(() => undefined);
    return { status: res.status, sessionId, streamed: false, messages: parseMessages('') };
  }
  if (!res.ok) throw await failure(res);
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('text/event-stream') && res.body) return { status: res.status, sessionId, streamed: true, messages: sseMessages(res.body, req.maxResponseBytes) };
  const text = await readLimited(res.body, req.maxResponseBytes);
  return { status: res.status, sessionId, streamed: false, messages: parseMessages(text) };
}

/** Opens the upstream's standalone event stream (GET); null when the upstream offers none (405). */
export async function openUpstreamStream(req: UpstreamRequest): Promise<AsyncIterable<JSONRPCMessage> | null> {
  const res = await req.fetch(req.url, { method: 'GET', headers: headersFor(req, 'text/event-stream'), signal: req.signal });
  if (res.status === 405 || res.status === 404) {
    await res.body?.cancel().catch(() => undefined);
    return null;
  }
  if (!res.ok || !res.body) throw await failure(res);
  return sseMessages(res.body, Number.MAX_SAFE_INTEGER);
}

/** Ends an upstream session (DELETE); failures are ignored, the upstream expires it anyway. */
export async function deleteUpstreamSession(req: UpstreamRequest): Promise<void> {
  if (!req.sessionId) return;
  const res = await req.fetch(req.url, { method: 'DELETE', headers: headersFor(req, 'application/json'), signal: req.signal }).catch(() => null);
  await res?.body?.cancel().catch(() => undefined);
}
