import type { FastifyReply } from 'fastify';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';
import { echoed } from '../core/echoed.js';
import { ERRORS, type HostReply } from './call-model.js';
import { envelopeProblem } from './message-envelope.js';
import { isAnswerTo } from './relay.js';
import type { GatewaySession } from './session-id.js';
import type { ReplayWriter } from './stream-replay.js';

/**
 * The one revision whose hosts may send JSON-RPC batches: 2025-03-26 requires a
 * server to receive them, 2025-06-18 removed them, and 2026-07-28 has none.
 */
export const BATCH_REVISION = '2025-03-26';
/** The most messages one batch may hold: each goes upstream at once, and each counts against the rate limits. */
export const MAX_BATCH_MESSAGES = 100;

/** Why a batch cannot be served at all (HTTP 400, -32600), or null. */
export function batchProblem(batch: readonly unknown[], session: GatewaySession | null): string | null {
  if (batch.length === 0) return 'The batch is empty: a JSON-RPC batch holds at least one message.';
  if (batch.length > MAX_BATCH_MESSAGES) return `The batch holds ${batch.length} messages: at most ${MAX_BATCH_MESSAGES} a batch.`;
  if (!session)
    return `JSON-RPC batches are served only in a session of revision ${BATCH_REVISION} (initialize cannot be batched): initialize first, or send one message per request.`;
  if (session.protocolVersion !== BATCH_REVISION)
    return `JSON-RPC batches are not part of revision ${session.protocolVersion} (removed in 2025-06-18): send one message per request.`;
  return null;
}

/** Serves one valid message of a batch as if it came alone: what the host gets back for it. */
export type BatchMessageHandler = (message: JSONRPCMessage) => Promise<HostReply>;

export interface BatchReplyOptions {
  sessionId: string;
  /** The host takes a JSON answer (its Accept header). */
  jsonAccepted: boolean;
  /** A replay writer for the event stream, so a host whose connection drops can resume it (GET, Last-Event-ID). */
  openStream: () => ReplayWriter;
  /** The answer when the upstream session is gone: the host must initialize again (HTTP 404). */
  sessionExpired: () => Promise<FastifyReply>;
}

/** What one message of the batch got back, with its request id (null for a notification or a response). */
interface Reply {
  id: RequestId | null;
  /** Refused before it was served: its reply is its error answer, whatever its id. */
  refused: boolean;
  reply: HostReply;
}

/** One message's part of the batch, its reply read up to its first message (`first`: a refusal's is its error answer). */
interface Part extends Omit<Reply, 'reply'> {
  first: JSONRPCMessage | undefined;
  rest: AsyncIterator<JSONRPCMessage> | null;
}

/**
 * Serves a 2025-03-26 batch: every message at once through `handle` (each is its own call,
 * with its own call-log row), then one answer. A JSON array of the answers when each
 * request's answer is the first thing it got (202 when the batch held no request);
 * otherwise an event stream carrying everything each call sends the host (progress,
 * log messages, an upstream's requests for input) and every answer, which ends after
 * the last one. A message of the batch that is not a valid request, notification or
 * response, an initialize, and requests that share an id, are answered -32600 in the array on their own.
 */
export async function replyToBatch(
  reply: FastifyReply,
  batch: readonly unknown[],
  handle: BatchMessageHandler,
  options: BatchReplyOptions,
): Promise<FastifyReply> {
  const shared = sharedRequestIds(batch);
  const replies = await Promise.all(
    batch.map(async (message): Promise<Reply> => {
      const refusal = messageProblem(message, shared);
      if (refusal) return { id: refusal.id, refused: true, reply: { kind: 'json', message: errorAnswer(refusal.id, refusal.reason) } };
      return { id: requestIdOf(message), refused: false, reply: await handle(message as JSONRPCMessage) };
    }),
  );
  const parts = await Promise.all(replies.map(partOf));
  if (replies.some((r) => r.reply.kind === 'session-expired')) {
    await Promise.all(parts.map(drain));
    return options.sessionExpired();
  }
  const answered = (p: Part) => p.first !== undefined && (p.refused || (p.id !== null && isAnswerTo(p.id, p.first)));
  const requests = parts.filter((p) => p.refused || p.id !== null);
  if (options.jsonAccepted && requests.every(answered)) {
    await Promise.all(parts.map(drain));
    reply.header('mcp-session-id', options.sessionId);
    if (requests.length === 0) return reply.code(202).send();
    return reply
      .code(200)
      .type('application/json')
      .send(JSON.stringify(requests.map((p) => p.first)));
  }
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': options.sessionId });
  const kept = options.openStream();
  const send = (message: JSONRPCMessage) => {
    const text = kept.event(message);
    if (!reply.raw.destroyed && !reply.raw.writableEnded) reply.raw.write(text);
  };
  for (const part of parts) if (part.first) send(part.first);
  // Every call's stream is read to its end, whatever the host's connection does: the end is where its row is written.
  await Promise.all(
    parts.map(async (part) => {
      if (!part.rest) return;
      for (let next = await part.rest.next(); !next.done; next = await part.rest.next()) send(next.value);
    }),
  );
  kept.end();
  if (!reply.raw.writableEnded) reply.raw.end();
  return reply;
}

/**
 * The request ids more than one request of the batch carries (keyed with their type: 5 and "5" are two ids). MCP
 * asks a requester never to use an id twice in a session: answers the host could not tell apart, and a cancellation
 * or progress of one id that would reach every request bearing it, so none of them is served.
 */
function sharedRequestIds(batch: readonly unknown[]): Set<string> {
  const seen = new Set<string>();
  const shared = new Set<string>();
  for (const message of batch) {
    if (envelopeProblem(message)) continue;
    const id = requestIdOf(message);
    if (id === null) continue;
    const key = idKey(id);
    if (seen.has(key)) shared.add(key);
    seen.add(key);
  }
  return shared;
}

const idKey = (id: RequestId): string => `${typeof id}:${id}`;

/** Why one message of a batch is refused on its own, with the id its error answer carries. */
function messageProblem(message: unknown, sharedIds: ReadonlySet<string>): { id: RequestId | null; reason: string } | null {
  const invalid = envelopeProblem(message);
  if (invalid) return { id: null, reason: invalid };
  const id = requestIdOf(message);
  if (id !== null && sharedIds.has(idKey(id)))
    return { id, reason: `The id ${echoed(JSON.stringify(id))} is carried by more than one request of this batch: give each request its own id.` };
  if ((message as { method?: unknown }).method === 'initialize')
    return { id: requestIdOf(message), reason: 'initialize must not be part of a JSON-RPC batch: send it on its own.' };
  return null;
}

/** The id of a message envelopeProblem accepted when it is a request (a method and an id), else null. */
function requestIdOf(message: unknown): RequestId | null {
  const m = message as { id?: RequestId; method?: string };
  return m.method !== undefined && m.id !== undefined ? m.id : null;
}

function errorAnswer(id: RequestId | null, message: string): JSONRPCMessage {
  return { jsonrpc: '2.0', id, error: { code: ERRORS.invalidRequest, message } } as JSONRPCMessage;
}

/** A reply read up to its first message: a stream's first message tells whether it can go out as JSON. */
async function partOf({ id, refused, reply }: Reply): Promise<Part> {
  if (reply.kind === 'json') return { id, refused, first: reply.message, rest: null };
  if (reply.kind !== 'stream') return { id, refused, first: undefined, rest: null };
  const rest = reply.messages[Symbol.asyncIterator]();
  const next = await rest.next();
  return next.done ? { id, refused, first: undefined, rest: null } : { id, refused, first: next.value, rest };
}

async function drain(part: Part): Promise<void> {
  if (part.rest) while (!(await part.rest.next()).done);
}
