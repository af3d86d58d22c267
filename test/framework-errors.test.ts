import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLoopback } from './helpers/gateway.js';
import { startTestApp, type TestApp } from './helpers/harness.js';

/** Every error the service answers has the contract's problem shape, whichever layer noticed it (fastify's router, Node's parser). */
let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await startTestApp();
  port = Number(new URL(await listenLoopback(t)).port);
});
afterAll(async () => {
  await t?.close();
});

/** Sends raw bytes and reads the whole answer (status line, headers, body). */
function raw(request: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(head!.split(' ')[1]), contentType: /content-type: ([^\r\n]+)/i.exec(head!)?.[1] ?? '', body });
    });
    socket.write(request);
  });
}

describe('errors noticed before a route runs', () => {
  it.each(['/api/v1/svc-admin/teams/%ZZ', '/api/v1/svc-admin/teams/%C0%AF', '/gateways/%ZZ/mcp'])(
    'a path that is not a valid URL (%s) is a 404 problem',
    async (url) => {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'not_found', status: 404 });
    },
  );

  it('a path parameter past the router limit is a 404 problem that names the path without echoing it whole', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/svc-admin/teams/${'a'.repeat(5000)}` });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'not_found', detail: expect.stringMatching(/^No route for GET \/api\/v1\/svc-admin\/teams\/a+…$/) });
    expect(res.body.length).toBeLessThan(600);
  });

  it('an id past the router limit on a route that takes one is a 404 problem that does not echo it whole', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/svc-admin/gateways/${'a'.repeat(5000)}` });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({
      code: 'not_found',
      detail: expect.stringMatching(/^No resource has the id in \/api\/v1\/svc-admin\/gateways\/a+…: ids are at most 200 characters\.$/),
    });
    expect(res.body.length).toBeLessThan(600);
  });

  it('headers over the limit are a 431 problem', async () => {
    const res = await raw(`GET /api/v1/svc-admin/whoami HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: 431, code: 'validation_failed' });
  });

  it('a NUL in a header at a gateway is a 400 problem', async () => {
    const res = await raw(
      `POST /gateways/00000000-0000-4000-8000-000000000000/mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\u0000b\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({ status: 400 });
  });
});
