import { readSseEvents } from '../gateway/sse.js';
import { isPlainObject } from './request-params.js';

/**
 * The JSON-RPC messages of the SDK's answer (to one message or a batch): a JSON array (or one message), or
 * one per event of a stream (stateless, the stream ends once every request is answered).
 */
export async function messagesOfResponse(response: Response): Promise<unknown[]> {
  if (!/^\s*text\/event-stream/i.test(response.headers.get('content-type') ?? '')) {
    const text = await response.text();
    if (text.trim() === '') return [];
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  const messages: unknown[] = [];
  if (!response.body) return messages;
  for await (const event of readSseEvents(response.body)) if (event.data !== '') messages.push(JSON.parse(event.data));
  return messages;
}

/** The SDK's answer as JSON for a host that takes no event stream: the one message (or the batch's array) its stream held. */
export async function asJsonResponse(response: Response, batch: boolean): Promise<Response> {
  if (!/^\s*text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return response;
  const messages = await messagesOfResponse(response);
  const headers = new Headers(response.headers);
  headers.set('content-type', 'application/json');
  return new Response(JSON.stringify(batch ? messages : (messages.find((m) => isPlainObject(m) && ('result' in m || 'error' in m)) ?? messages.at(-1))), {
    status: response.status,
    headers,
  });
}
