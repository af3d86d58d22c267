import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/server';

/**
 * Requests an upstream sends to the host (sampling, elicitation, roots) travel with
 * an id that names their upstream, so the host's answer, which may reach any
 * replica, goes back to the right one without any shared state.
 */
const PREFIX = 'svcgw:';

export const relayId = (assignmentGuid: string, id: RequestId): string => `${PREFIX}${assignmentGuid}:${JSON.stringify(id)}`;

/** The upstream and original id behind a relayed id, or null for the host's own ids. */
export function unrelayId(id: unknown): { assignmentGuid: string; id: RequestId } | null {
  if (typeof id !== 'string' || !id.startsWith(PREFIX)) return null;
  const rest = id.slice(PREFIX.length);
  const colon = rest.indexOf(':');
  if (colon < 0) return null;
  try {
    const original = JSON.parse(rest.slice(colon + 1)) as unknown;
    if (typeof original !== 'string' && typeof original !== 'number') return null;
    return { assignmentGuid: rest.slice(0, colon), id: original };
  } catch {
    return null;
  }
}

/**
 * An upstream's message as the host sees it: its own requests (and its
 * cancellations of them) get relayed ids; responses and other notifications pass
 * unchanged (ids and progress tokens are the host's own).
 */
export function fromUpstream(assignmentGuid: string, message: JSONRPCMessage): JSONRPCMessage {
  const m = message as { id?: RequestId; method?: string; params?: Record<string, unknown> };
  if (m.method !== undefined && m.id !== undefined) return { ...message, id: relayId(assignmentGuid, m.id) } as JSONRPCMessage;
  if (m.method === 'notifications/cancelled' && m.params && (typeof m.params.requestId === 'string' || typeof m.params.requestId === 'number')) {
    return { ...message, params: { ...m.params, requestId: relayId(assignmentGuid, m.params.requestId as RequestId) } } as JSONRPCMessage;
  }
  return message;
}

/** The host's cancellation of a relayed request goes to its upstream with the original id. */
export function cancelledTarget(message: JSONRPCMessage): { assignmentGuid: string; message: JSONRPCMessage } | null {
  const m = message as { method?: string; params?: Record<string, unknown> };
  if (m.method !== 'notifications/cancelled') return null;
  const target = unrelayId(m.params?.requestId);
  if (!target) return null;
  return { assignmentGuid: target.assignmentGuid, message: { ...message, params: { ...m.params, requestId: target.id } } as JSONRPCMessage };
}

/** Whether `message` is the response (result or error) to the host's request `id`. */
export const isAnswerTo = (id: unknown, message: JSONRPCMessage): boolean =>
  (message as { id?: unknown }).id === id && !('method' in message) && ('result' in message || 'error' in message);

/**
 * Whether `message` answers a request the host cancelled (the gateway's error, marked
 * `data.cancelled`): the revisions say it SHOULD NOT be sent (an SDK client reports an
 * answer to a request it no longer knows as an error). Where the transport lets the
 * gateway keep silent, a stream ends without it; the call log keeps the row.
 */
export const isCancelledAnswer = (message: JSONRPCMessage): boolean =>
  (message as { error?: { data?: { cancelled?: unknown } } }).error?.data?.cancelled === true;
