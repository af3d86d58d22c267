/**
 * Server-sent events as MCP's HTTP transports use them: parse an upstream's event
 * stream into its `data` payloads, and format messages for the host.
 */

export interface SseEvent {
  event: string;
  data: string;
  /** The event's `id` field, when it has one (a resumable stream's position). */
  id?: string;
  /** The event's `retry` field: how long to wait before reconnecting, in ms. */
  retry?: number;
}

/**
 * Reads a byte stream as SSE events (WHATWG rules: `field: value` lines, blank line
 * ends an event, `data` lines joined by newlines, comments ignored). The size limit
 * is the stream's (UpstreamHttpResponse.chunks), so an endless upstream cannot
 * exhaust memory.
 */
export async function* readSseEvents(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  const lineEnd = /\r\n|\r|\n/g;
  let buffer = '';
  const next = new PendingEvent();
  for await (const value of chunks) {
    buffer += decoder.decode(value, { stream: true });
    // Lines are cut from a moving position (not by re-slicing the rest each time), so a big event costs one pass.
    let start = 0;
    lineEnd.lastIndex = 0;
    for (let m = lineEnd.exec(buffer); m; m = lineEnd.exec(buffer)) {
      // A \r that ends the text so far may be the first half of a \r\n split across chunks: wait for the next one.
      if (m[0] === '\r' && m.index === buffer.length - 1) break;
      const line = buffer.slice(start, m.index);
      start = lineEnd.lastIndex;
      if (line === '') {
        if (next.pending()) yield next.take();
        else next.event = '';
        continue;
      }
      if (line.charCodeAt(0) === 58 /* ':' */) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 /* ' ' */ ? colon + 2 : colon + 1);
      if (field === 'data') next.data.push(value);
      else if (field === 'event') next.event = value;
      else if (field === 'id' && !value.includes('\0')) next.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) next.retry = Number(value);
    }
    buffer = buffer.slice(start);
  }
  if (next.pending()) yield next.take();
}

/**
 * The fields of the event being read: a class, not closures made per stream (docs/decisions.md,
 * "No named closure made per call on a hot path").
 */
class PendingEvent {
  event = '';
  data: string[] = [];
  id: string | undefined;
  retry: number | undefined;

  /** An event with no data still moves the stream's position (id) or its reconnection delay (retry): those are yielded too, with empty data. */
  pending(): boolean {
    return this.data.length > 0 || this.id !== undefined || this.retry !== undefined;
  }

  take(): SseEvent {
    const { id, retry } = this;
    const out: SseEvent = {
      event: this.event || 'message',
      data: this.data.join('\n'),
      ...(id !== undefined ? { id } : {}),
      ...(retry !== undefined ? { retry } : {}),
    };
    this.event = '';
    this.data = [];
    this.id = undefined;
    this.retry = undefined;
    return out;
  }
}

/** One JSON-RPC message as an SSE `message` event. */
export const sseMessage = (message: unknown): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
