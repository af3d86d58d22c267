import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EgressPolicy } from '../src/core/egress.js';
import { AppError } from '../src/core/errors.js';
import { ResponseTooLargeError, UpstreamClient } from '../src/gateway/upstream-client.js';

/** The gateway's HTTP client against a real loopback server: connection reuse, redirects, egress, aborts. */
let server: http.Server;
let base: string;
const connections: unknown[] = [];
const seen: { method: string; url: string; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body });
      if (req.url === '/temporary') return void res.writeHead(307, { location: '/echo' }).end();
      if (req.url === '/see-other') return void res.writeHead(303, { location: '/echo' }).end();
      if (req.url === '/hang') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': waiting\n\n');
      if (req.url === '/long') return void writeLong(res);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, body }));
    });
  });
  server.on('connection', (socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

/** 1 MiB in 64 chunks of 16 KiB, each byte its offset modulo 251: a reader can check it got every byte in order. */
const LONG_BYTES = 1024 * 1024;
function writeLong(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  let offset = 0;
  const next = () => {
    while (offset < LONG_BYTES) {
      const chunk = Buffer.alloc(16 * 1024, 0);
      for (let i = 0; i < chunk.length; i++) chunk[i] = (offset + i) % 251;
      offset += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', next);
    }
    res.end();
  };
  next();
}

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (client: UpstreamClient, path: string, signal = AbortSignal.timeout(10_000)) =>
  client.fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}', signal });

describe('gateway upstream client', () => {
  it('reuses its keep-alive connections for calls made one after another', async () => {
    const client = new UpstreamClient(new EgressPolicy(['127.0.0.0/8']));
    const before = connections.length;
    for (let i = 0; i < 5; i++) expect(JSON.parse(await (await post(client, '/echo')).text(4096))).toEqual({ method: 'POST', body: '{"a":1}' });
    // undici's pool opens a spare connection while its first one is still connecting: two at most, then no more.
    expect(connections.length - before).toBeLessThanOrEqual(2);
    const warm = connections.length;
    for (let i = 0; i < 5; i++) await (await post(client, '/echo')).text(4096);
    expect(connections.length).toBe(warm);
    client.close();
  });

  it('follows a 307 with the same method and body, and a 303 as a GET without a body', async () => {
    const client = new UpstreamClient(new EgressPolicy(['127.0.0.0/8']));
    expect(JSON.parse(await (await post(client, '/temporary')).text(4096))).toEqual({ method: 'POST', body: '{"a":1}' });
    expect(JSON.parse(await (await post(client, '/see-other')).text(4096))).toEqual({ method: 'GET', body: '' });
    client.close();
  });

  it('refuses an address the egress policy does not allow, written as an IP or resolved from a name', async () => {
    const client = new UpstreamClient(new EgressPolicy([]));
    const before = seen.length;
    await expect(post(client, '/echo')).rejects.toThrow(AppError);
    const named = client.fetch(base.replace('127.0.0.1', 'localhost') + '/echo', { method: 'GET', headers: {}, signal: AbortSignal.timeout(10_000) });
    await expect(named).rejects.toMatchObject({
      extras: { errors: [{ path: 'url', message: expect.stringMatching(/^host localhost is a loopback address not allowed/) }] },
    });
    expect(seen.length).toBe(before);
    client.close();
  });

  it('cuts an exchange at its timeout, body included, with a TimeoutError, and leaves no timer behind a finished one', async () => {
    const client = new UpstreamClient(new EgressPolicy(['127.0.0.0/8']));
    // Watch the timers the exchanges start, not the process's count of timers: the
    // loopback server's own socket timers come and go while the test runs.
    const started = vi.spyOn(globalThis, 'setTimeout');
    const cleared = vi.spyOn(globalThis, 'clearTimeout');
    try {
      for (let i = 0; i < 3; i++)
        await (await client.fetch(`${base}/echo`, { method: 'GET', headers: {}, signal: new AbortController().signal, timeoutMs: 60_000 })).text(4096);
      const exchangeTimers = started.mock.results.filter((_, i) => started.mock.calls[i]![1] === 60_000).map((r) => r.value as unknown);
      expect(exchangeTimers).toHaveLength(3);
      const clearedTimers = new Set(cleared.mock.calls.map((call) => call[0] as unknown));
      expect(exchangeTimers.filter((timer) => !clearedTimers.has(timer))).toEqual([]);
    } finally {
      started.mockRestore();
      cleared.mockRestore();
    }
    const res = await client.fetch(`${base}/hang`, { method: 'GET', headers: {}, signal: new AbortController().signal, timeoutMs: 50 });
    await expect(res.text(4096)).rejects.toMatchObject({ name: 'TimeoutError' });
    client.close();
  });

  it('hands a long answer to a slow reader whole and in order, and cuts a reader past its limit without harm to later calls', async () => {
    const client = new UpstreamClient(new EgressPolicy(['127.0.0.0/8']));
    const res = await post(client, '/long');
    let received = 0;
    let inOrder = true;
    for await (const chunk of res.chunks(2 * LONG_BYTES)) {
      for (let i = 0; i < chunk.byteLength; i++) inOrder &&= chunk[i] === (received + i) % 251;
      received += chunk.byteLength;
      // A reader slower than the socket: the client stops reading past its high-water mark and resumes when read.
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect({ received, inOrder }).toEqual({ received: LONG_BYTES, inOrder: true });
    await expect((await post(client, '/long')).text(100_000)).rejects.toBeInstanceOf(ResponseTooLargeError);
    expect(JSON.parse(await (await post(client, '/echo')).text(4096))).toEqual({ method: 'POST', body: '{"a":1}' });
    client.close();
  });

  it('an abort while the body streams fails with the signal reason', async () => {
    const client = new UpstreamClient(new EgressPolicy(['127.0.0.0/8']));
    const abort = new AbortController();
    const res = await post(client, '/hang', abort.signal);
    const reading = res.text(4096);
    abort.abort(new DOMException('stop', 'TimeoutError'));
    await expect(reading).rejects.toMatchObject({ name: 'TimeoutError' });
    client.close();
  });
});
