import { describe, expect, it } from 'vitest';
import { readSseEvents, sseMessage } from '../src/gateway/sse.js';

async function* pieces(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

const read = async (text: string, size: number) => {
  const out = [];
  for await (const e of readSseEvents(pieces(text, size))) out.push(e);
  return out;
};

describe('SSE parsing of upstream streams', () => {
  const stream =
    ': comment\r\n' +
    'event: endpoint\r\ndata: /message?x=1\r\n\r\n' +
    'data: {"a":1}\n\n' +
    'data:first\rdata: second\r\r' +
    'event: message\nid: 7\ndata: é\n\n' +
    sseMessage({ jsonrpc: '2.0', id: 1, result: {} });
  const expected = [
    { event: 'endpoint', data: '/message?x=1' },
    { event: 'message', data: '{"a":1}' },
    { event: 'message', data: 'first\nsecond' },
    { event: 'message', data: 'é', id: '7' },
    { event: 'message', data: '{"jsonrpc":"2.0","id":1,"result":{}}' },
  ];

  it('gives the same events whatever the chunking (CR, LF and CRLF line ends, split anywhere, multi-byte characters)', async () => {
    for (const size of [1, 2, 3, 5, 7, 64, 4096]) expect(await read(stream, size)).toEqual(expected);
  });

  it('dispatches a last event that the stream ends without a blank line', async () => {
    expect(await read('data: tail\n', 4)).toEqual([{ event: 'message', data: 'tail' }]);
  });

  it('yields an event that only moves the position (id) or sets the reconnection delay (retry), for resumption', async () => {
    expect(await read('id: ev-1\nretry: 20\ndata:\n\n', 3)).toEqual([{ event: 'message', data: '', id: 'ev-1', retry: 20 }]);
    expect(await read('id: ev-2\n\n', 64)).toEqual([{ event: 'message', data: '', id: 'ev-2' }]);
  });
});
