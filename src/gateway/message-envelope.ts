import { echoed } from '../core/echoed.js';
import { kindOf } from '../mcp/request-params.js';

/**
 * The ids a gateway accepts on a host's message. MCP ids are strings or integers,
 * never null, and the answer carries the id back for the host to match: a number
 * JSON cannot carry back exactly (a fraction, a 5,000-digit integer that JSON.parse
 * turns into Infinity, anything past 2^53) would come back as another id, or as
 * `null`. Such a message is refused as an invalid request (-32600, id null, HTTP
 * 400) before anything is served or forwarded.
 */
export function requestIdProblem(message: object): string | null {
  if (!('id' in message)) return null;
  const id = (message as { id: unknown }).id;
  if (typeof id === 'string') return null;
  if (typeof id === 'number') {
    if (Number.isSafeInteger(id)) return null;
    return Number.isInteger(id)
      ? 'The id is an integer too large to be answered exactly: use a string or an integer between -(2^53 - 1) and 2^53 - 1.'
      : 'The id must be a string or an integer, not a fraction or a number JSON cannot carry back.';
  }
  return `The id must be a string or an integer, not ${kindOf(id)}.`;
}

/**
 * MCP names every notification `notifications/...`. Another method without an id is a request that lost its id: no
 * answer could reach the host, and relayed as a notification it would reach every upstream of the session, past the
 * gateway's naming and curation. Refused, naming the method (cut: it is the host's text).
 */
function notificationProblem(method: string): string | null {
  if (method.startsWith('notifications/')) return null;
  return `${echoed(method)} is a request, and has no id: send it with an id (string or integer) to have it answered; a notification's method starts with notifications/.`;
}

/**
 * Why a POSTed body is not one JSON-RPC 2.0 message a gateway can take, or null: a
 * batch (gone since 2025-06-18), anything but an object with `jsonrpc: "2.0"`, an id
 * the answer could not carry back, a request method without an id (notificationProblem), or an object that is neither
 * a request, a notification nor a response. Answered -32600 (id null, HTTP 400) by every route.
 */
export function envelopeProblem(body: unknown): string | null {
  if (Array.isArray(body)) return 'JSON-RPC batches are not supported: send one message per request.';
  if (!body || typeof body !== 'object' || (body as { jsonrpc?: unknown }).jsonrpc !== '2.0') return 'The body must be one JSON-RPC 2.0 message.';
  const badId = requestIdProblem(body);
  if (badId) return badId;
  const m = body as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
  if (m.method !== undefined) {
    if (typeof m.method !== 'string' || m.method === '') return 'The method must be a non-empty string.';
    return m.id === undefined ? notificationProblem(m.method) : null;
  }
  const isResponse = m.id !== undefined && (m.result !== undefined) !== (m.error !== undefined);
  return isResponse
    ? null
    : 'The message is neither a request (a method), a notification (a method without an id) nor a response (an id with a result or an error).';
}
