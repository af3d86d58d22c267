import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { thenDone } from './call-model.js';
import { readSseEvents } from './sse.js';
import { UpstreamHttpError, upstreamMessageOf, type UpstreamReply, type UpstreamRequest } from './upstream-http.js';

/**
 * One exchange with an upstream that speaks only the legacy HTTP+SSE transport
 * (protocol 2024-11-05): GET opens an event stream whose first `endpoint` event
 * names where to POST, and every answer arrives on that stream. A legacy session
 * lives exactly as long as its stream, so the gateway opens one per exchange
 * (initialize, the message, its answer, close) and keeps nothing between requests:
 * any replica serves any request, at the price of an initialize per call.
 */

/** The parts of a host session a legacy exchange needs to initialize the upstream. */
export interface LegacyInit {
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientInfo: { name: string; version: string };
}

/** An open legacy session: post messages, read what the stream carries, close. */
interface LegacySession {
  post(message: JSONRPCMessage): Promise<void>;
  /** Messages from the stream, in order; one shared iterator. */
  next(): Promise<JSONRPCMessage | null>;
  /** Ids of requests the upstream sent the host that await an answer. */
  pending: Set<string>;
  close(): void;
}

/**
 * Exchanges live in this process, by (assignment, host connection, host session):
 * a host's answer to an upstream's request (sampling, elicitation) or a
 * notification (cancellation, progress) can only go to the stream that is still
 * open, which is here. One that reaches another replica finds none and is dropped.
 */
const live = new Map<string, Set<LegacySession>>();

const INIT_ID = 'svcgw-legacy-init';

async function openSession(req: UpstreamRequest): Promise<LegacySession> {
  const abort = new AbortController();
  const signal = AbortSignal.any([req.signal, abort.signal]);
  const headers: Record<string, string> = {
    ...req.credentialHeaders,
    traceparent: req.traceparent,
    ...(req.tracestate ? { tracestate: req.tracestate } : {}),
  };
  const res = await req.fetch(req.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal, timeoutMs: req.timeoutMs });
  if (!res.ok) {
    const body = await res.text(4096).catch(() => '');
    abort.abort();
    throw new UpstreamHttpError(res.status, body.slice(0, 1000), res.headers());
  }
  const events = readSseEvents(res.chunks(req.maxResponseBytes));
  let endpoint: URL | null = null;
  for (let e = await events.next(); !e.done; e = await events.next()) {
    if (e.value.event === 'endpoint') {
      endpoint = new URL(e.value.data.trim(), req.url);
      break;
    }
  }
  if (!endpoint) {
    abort.abort();
    throw new Error('the upstream stream gave no endpoint');
  }
  // The endpoint must stay on the upstream's origin: a stream must not steer the gateway's credentials elsewhere.
  if (endpoint.origin !== new URL(req.url).origin) {
    abort.abort();
    throw new Error('the upstream named a message endpoint on another origin');
  }
  const target = endpoint;
  const session: LegacySession = {
    pending: new Set(),
    async post(message) {
      const posted = await req.fetch(target, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(message),
        signal,
        timeoutMs: req.timeoutMs,
      });
      const text = await posted.text(4096).catch(() => '');
      if (!posted.ok) throw new UpstreamHttpError(posted.status, text.slice(0, 1000), posted.headers());
    },
    async next() {
      for (let e = await events.next(); !e.done; e = await events.next()) {
        if (e.value.event !== 'message' || !e.value.data.trim()) continue;
        return upstreamMessageOf(e.value.data);
      }
      return null;
    },
    close() {
      abort.abort();
      void events.return(undefined).catch(() => undefined);
    },
  };
  return session;
}

/** Reads the stream until the answer to `id`, yielding everything before it too. */
async function* untilAnswer(session: LegacySession, id: RequestId): AsyncGenerator<JSONRPCMessage> {
  for (let msg = await session.next(); msg; msg = await session.next()) {
    const m = msg as { id?: RequestId; method?: string };
    if (m.method !== undefined && m.id !== undefined) session.pending.add(JSON.stringify(m.id));
    yield msg;
    if (m.method === undefined && m.id === id) return;
  }
  throw new Error('the upstream closed the stream without an answer');
}

/** Opens a legacy session and initializes it; returns the session and the upstream's initialize result. */
async function initialized(req: UpstreamRequest, init: LegacyInit): Promise<{ session: LegacySession; result: Record<string, unknown> }> {
  const session = await openSession(req);
  try {
    await session.post({
      jsonrpc: '2.0',
      id: INIT_ID,
      method: 'initialize',
      params: { protocolVersion: init.protocolVersion, capabilities: init.clientCapabilities, clientInfo: init.clientInfo },
    } as JSONRPCMessage);
    type InitAnswer = { result?: Record<string, unknown>; error?: { message?: string } };
    let response: InitAnswer | null = null;
    for await (const msg of untilAnswer(session, INIT_ID)) if ((msg as { id?: unknown }).id === INIT_ID) response = msg as unknown as InitAnswer;
    if (!response?.result) throw new Error(response?.error?.message ?? 'the upstream gave no initialize result');
    await session.post({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
    return { session, result: response.result };
  } catch (err) {
    session.close();
    throw err;
  }
}

/** Initializes a legacy upstream and closes again: what the gateway's own initialize needs to know. */
export async function initializeLegacyUpstream(req: UpstreamRequest, init: LegacyInit): Promise<Record<string, unknown>> {
  const { session, result } = await initialized(req, init);
  session.close();
  return result;
}

/**
 * Sends one message to a legacy upstream. A request gets its own session, whose
 * stream is relayed until the answer and then closed. A notification or a host's
 * answer goes to the live exchange of the same host session in this process, if any.
 */
export async function sendToLegacyUpstream(req: UpstreamRequest, init: LegacyInit, liveKey: string, message: JSONRPCMessage): Promise<UpstreamReply> {
  const m = message as { id?: RequestId; method?: string };
  const none: UpstreamReply = { status: 202, sessionId: null, streamed: false, messages: (async function* () {})() };
  if (m.method === undefined || m.id === undefined) {
    const sessions = [...(live.get(liveKey) ?? [])];
    const answered = m.id !== undefined ? sessions.filter((s) => s.pending.delete(JSON.stringify(m.id))) : sessions;
    await Promise.allSettled(answered.map((s) => s.post(message)));
    return none;
  }
  const { session } = await initialized(req, init);
  const sessions = live.get(liveKey) ?? new Set<LegacySession>();
  sessions.add(session);
  live.set(liveKey, sessions);
  const release = () => {
    session.close();
    sessions.delete(session);
    if (sessions.size === 0 && live.get(liveKey) === sessions) live.delete(liveKey);
  };
  try {
    await session.post(message);
  } catch (err) {
    release();
    throw err;
  }
  return {
    status: 200,
    sessionId: null,
    streamed: true,
    messages: thenDone(untilAnswer(session, m.id!), release),
  };
}
