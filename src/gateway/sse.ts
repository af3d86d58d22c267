/**
 * Server-sent events as MCP's HTTP transports use them: parse an upstream's event
 * stream into its `data` payloads, and format messages for the host.
 */

export interface SseEvent {
  event: string;
  data: string;
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
  let event = '';
  let data: string[] = [];
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
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.charCodeAt(0) === 58 /* ':' */) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 /* ' ' */ ? colon + 2 : colon + 1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
    }
    buffer = buffer.slice(start);
  }
  if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
}

/** One JSON-RPC message as an SSE `message` event. */
export const sseMessage = (message: unknown): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
