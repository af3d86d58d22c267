import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../src/core/egress.js';
import { sendToCollector } from '../src/forwarder/collector-client.js';

/**
 * The collector client never throws: a header Node cannot send (a character beyond
 * Latin-1, stored before the header rule refused it) is a retry outcome naming the
 * header, so the forwarder keeps the batch and alerts, instead of failing its whole
 * pass three times a second (found by a security trial, session 25).
 */
let collector: http.Server;
let url: string;
let received = 0;
beforeAll(async () => {
  collector = http.createServer((req, res) => {
    received++;
    req.resume();
    // /trickle answers 200 and then a space every 100 ms, for ever (until the client goes).
    if (req.url === '/trickle')
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => res.write(' '), 100);
        res.on('close', () => clearInterval(drip));
      });
    else req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(collector.address() as { port: number }).port}/v1/logs`;
});
afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())));

describe('sendToCollector', () => {
  it('answers a header Node cannot send with a retry naming it, and sends nothing', async () => {
    const policy = new EgressPolicy(['127.0.0.1/32']);
    const request = { url, body: '{}', contentType: 'application/json', timeoutMs: 5_000 };
    const outcome = await sendToCollector(policy, { ...request, headers: { 'X-Coll': 'secret-\u{1F600}-value' } });
    expect(outcome).toMatchObject({ kind: 'retry', status: null });
    expect((outcome as { reason: string }).reason).toMatch(/^the request could not be sent: .*X-Coll/);
    expect((outcome as { reason: string }).reason).not.toContain('secret-');
    expect(received).toBe(0);
    // The same collector with a header it can send accepts the body.
    expect(await sendToCollector(policy, { ...request, headers: { 'X-Coll': 'plain' } })).toMatchObject({ kind: 'accepted', status: 200 });
    expect(received).toBe(1);
  });

  // Found by a security trial (session 26): an idle timeout let one workspace's collector hold every workspace's forwarding.
  it('gives up on a collector that answers a byte now and then, at the deadline of the whole exchange', async () => {
    const policy = new EgressPolicy(['127.0.0.1/32']);
    const outcome = await sendToCollector(policy, {
      url: url.replace('/v1/logs', '/trickle'),
      body: '{}',
      contentType: 'application/json',
      timeoutMs: 600,
      headers: {},
    });
    expect(outcome).toMatchObject({ kind: 'retry', status: null, reason: 'no whole answer within 600 ms' });
  });
});
