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
  let buffer = '';
  let event = '';
  let data: string[] = [];
  for await (const value of chunks) {
    buffer += decoder.decode(value, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer[newline] === '\r' && buffer[newline + 1] === '\n' ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
    }
  }
  if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
}

/** One JSON-RPC message as an SSE `message` event. */
export const sseMessage = (message: unknown): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
