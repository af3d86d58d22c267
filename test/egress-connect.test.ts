import http from 'node:http';
import net from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy, type Resolve } from '../src/core/egress.js';
import { egressFetch } from '../src/core/servers/egress-fetch.js';
import { sendToCollector } from '../src/forwarder/collector-client.js';
import { UpstreamClient } from '../src/gateway/upstream-client.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { validated } from './helpers/servers.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';

/**
 * The egress rule where connections are opened (issue 17, item 4): every address
 * form that reaches a forbidden IPv4 address through IPv6, and the plain forbidden
 * ranges, are refused when a URL is stored and when a name resolving to them is
 * connected to, by every outbound client (egressFetch for validation and OAuth, the
 * gateway's upstream client, the collector client). Then the DNS-flip race: a name
 * that answers an allowed loopback address (127.0.0.2) or a forbidden one
 * (127.0.0.1) by turns never gets a connection to the forbidden one. Names are
 * resolved by a resolver given to EgressPolicy: no system DNS, no hosts file.
 */
const ALLOWED = '127.0.0.2';
const FORBIDDEN = '127.0.0.1';
const ALLOWED_CIDRS = [`${ALLOWED}/32`];

const FORMS: [address: string, what: string][] = [
  ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
  ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
  ['64:ff9b::a00:1', 'NAT64 of 10.0.0.1'],
  ['2002:7f00:1::', '6to4 of 127.0.0.1'],
  ['2001:0:7f00:1::', 'Teredo, server 127.0.0.1'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, client 127.0.0.1 (inverted)'],
  ['::127.0.0.1', 'IPv4-compatible 127.0.0.1'],
  ['::ffff:127.0.0.1', 'IPv4-mapped 127.0.0.1'],
  ['::ffff:169.254.169.254', 'IPv4-mapped 169.254.169.254'],
  ['127.0.0.1', 'loopback outside EGRESS_ALLOWED_CIDRS'],
  ['::1', 'IPv6 loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['192.168.1.1', 'private'],
  ['fd00::1', 'IPv6 unique local'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['fe80::1', 'IPv6 link-local'],
  ['100.100.100.200', 'Alibaba metadata'],
  ['0.0.0.0', 'unspecified'],
];
const nameOf = (i: number) => `form-${i}.egress.test`;
const literalUrl = (address: string, port: number, path = '/mcp') => `http://${net.isIPv6(address) ? `[${address}]` : address}:${port}${path}`;

/** A fixed-seed sequence (mulberry32): the race is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** The test's DNS: form-<i>.egress.test is FORMS[i]; flip.egress.test answers the allowed or the forbidden loopback address at random. */
class TestDns {
  forbiddenAnswers = 0;
  allowedAnswers = 0;
  private readonly next = seeded(17);
  readonly resolve: Resolve = async (hostname) => {
    if (hostname === 'flip.egress.test') {
      const forbidden = this.next() < 0.5;
      if (forbidden) this.forbiddenAnswers++;
      else this.allowedAnswers++;
      return [{ address: forbidden ? FORBIDDEN : ALLOWED, family: 4 }];
    }
    const form = /^form-(\d+)\.egress\.test$/.exec(hostname);
    const address = form ? FORMS[Number(form[1])]?.[0] : undefined;
    if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return [{ address, family: net.isIP(address) }];
  };
}

/** An open MCP server on 127.0.0.2 (any other path answers 204), and a listener on 127.0.0.1 at the same port that only counts connections. */
async function startPair(): Promise<{ port: number; forbiddenConnections: () => number; close: () => Promise<void> }> {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'allowed', version: '1.0.0' });
    server.registerTool('ping', { description: 'Answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
    return server;
  });
  for (let attempt = 0; ; attempt++) {
    const allowed = http.createServer(async (req, res) => {
      if (!req.url?.startsWith('/mcp')) {
        // Closed after each answer: every request opens a connection, so every request is a lookup.
        res.writeHead(204, { connection: 'close' }).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      const body = Buffer.concat(chunks);
      const response = await handler.fetch(
        new Request(`http://${ALLOWED}${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body } : {}) }),
      );
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
    await new Promise<void>((resolve) => allowed.listen(0, ALLOWED, resolve));
    const port = (allowed.address() as net.AddressInfo).port;
    let connections = 0;
    const forbidden = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    const bound = await new Promise<boolean>((resolve) => {
      forbidden.once('error', () => resolve(false));
      forbidden.listen(port, FORBIDDEN, () => resolve(true));
    });
    const closeAllowed = () => new Promise<void>((resolve) => allowed.close(() => resolve()).closeAllConnections());
    if (!bound) {
      await closeAllowed();
      if (attempt < 5) continue;
      throw new Error(`no port free on both ${ALLOWED} and ${FORBIDDEN}`);
    }
    return {
      port,
      forbiddenConnections: () => connections,
      close: async () => {
        await closeAllowed();
        await new Promise((resolve) => forbidden.close(resolve));
      },
    };
  }
}

const refusedNaming = (field: string) => ({ code: 'validation_failed', extras: { errors: [expect.objectContaining({ path: field })] } });

describe('every address form, at connect time, for every outbound client', () => {
  const dns = new TestDns();
  const policy = new EgressPolicy(ALLOWED_CIDRS, dns.resolve);
  const upstreams = new UpstreamClient(policy);
  afterAll(() => upstreams.close());

  it.each(FORMS.map(([address, what], i) => [address, what, i] as const))('refuses a name resolving to %s (%s)', async (address, _what, i) => {
    const byName = `http://${nameOf(i)}:8080/mcp`;
    await expect(egressFetch(policy, 'url')(byName)).rejects.toMatchObject(refusedNaming('url'));
    await expect(egressFetch(policy, 'oauthTokenEndpoint')(byName, { method: 'POST', body: 'grant_type=refresh_token' })).rejects.toMatchObject(
      refusedNaming('oauthTokenEndpoint'),
    );
    await expect(upstreams.fetch(byName, { method: 'POST', headers: {}, body: '{}', signal: new AbortController().signal })).rejects.toMatchObject(
      refusedNaming('url'),
    );
    const collector = await sendToCollector(policy, { url: byName, headers: {}, body: '{}', contentType: 'application/json', timeoutMs: 5000 });
    expect(collector).toMatchObject({ kind: 'retry', status: null });
    expect((collector as { reason: string }).reason).toContain(`collectorUrl: host ${nameOf(i)}`);
    // Written as an IP address, the host is judged before any connection (no lookup happens for it).
    await expect(egressFetch(policy, 'url')(literalUrl(address, 8080))).rejects.toMatchObject(refusedNaming('url'));
  });

  it('refuses a redirect to a name that resolves to a forbidden form, hop by hop', async () => {
    const redirector = http.createServer((req, res) => res.writeHead(302, { location: `http://${nameOf(0)}:8080/latest/meta-data` }).end());
    await new Promise<void>((resolve) => redirector.listen(0, ALLOWED, resolve));
    try {
      const { port } = redirector.address() as net.AddressInfo;
      await expect(egressFetch(policy, 'url')(`http://${ALLOWED}:${port}/start`)).rejects.toMatchObject(refusedNaming('url'));
    } finally {
      await new Promise((resolve) => redirector.close(resolve));
    }
  });
});

describe('a redirect to another origin', () => {
  it('leaves the credentials behind, and refuses to carry a body there', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const target = http.createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => target.listen(0, ALLOWED, resolve));
    const targetPort = (target.address() as net.AddressInfo).port;
    const redirector = http.createServer((req, res) =>
      res.writeHead(req.method === 'POST' ? 307 : 302, { location: `http://${ALLOWED}:${targetPort}/next` }).end(),
    );
    await new Promise<void>((resolve) => redirector.listen(0, ALLOWED, resolve));
    const start = `http://${ALLOWED}:${(redirector.address() as net.AddressInfo).port}/start`;
    const policy = new EgressPolicy(ALLOWED_CIDRS);
    try {
      const secretHeaders = { authorization: 'Bearer identity-secret', 'x-api-key': 'key-secret', accept: 'application/json' };
      const res = await egressFetch(policy, 'url')(start, { headers: secretHeaders });
      expect(res.status).toBe(200);
      expect(seen).toHaveLength(1);
      expect(seen[0]).not.toHaveProperty('authorization');
      expect(seen[0]).not.toHaveProperty('x-api-key');
      expect(seen[0]!.accept).toBe('application/json');
      await expect(
        egressFetch(policy, 'oauthTokenEndpoint')(start, {
          method: 'POST',
          body: 'client_secret=shh',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      ).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining('oauthTokenEndpoint') });
      expect(seen).toHaveLength(1);
      // The gateway's own upstream client follows the same rule.
      const upstreams = new UpstreamClient(policy);
      const relayed = await upstreams.fetch(start, { method: 'GET', headers: secretHeaders, signal: new AbortController().signal });
      expect(relayed.status).toBe(200);
      relayed.discard();
      expect(seen).toHaveLength(2);
      expect(seen[1]).not.toHaveProperty('authorization');
      expect(seen[1]).not.toHaveProperty('x-api-key');
      await expect(upstreams.fetch(start, { method: 'POST', headers: secretHeaders, body: '{}', signal: new AbortController().signal })).rejects.toMatchObject({
        code: 'validation_failed',
      });
      expect(seen).toHaveLength(2);
      upstreams.close();
    } finally {
      await Promise.all([new Promise((resolve) => redirector.close(resolve)), new Promise((resolve) => target.close(resolve))]);
    }
  });
});

describe('the DNS-flip race', () => {
  let pair: Awaited<ReturnType<typeof startPair>>;
  beforeAll(async () => {
    pair = await startPair();
  });
  afterAll(async () => {
    await pair?.close();
  });

  it.each([
    ['egressFetch (validation, OAuth)', 'fetch'],
    ["the gateway's upstream client", 'gateway'],
  ] as const)('never connects to the forbidden address: %s', async (_what, client) => {
    const dns = new TestDns();
    const policy = new EgressPolicy(ALLOWED_CIDRS, dns.resolve);
    const upstreams = new UpstreamClient(policy);
    const url = `http://flip.egress.test:${pair.port}/probe`;
    const before = pair.forbiddenConnections();
    let answered = 0;
    let refused = 0;
    const one = async () => {
      try {
        if (client === 'fetch') {
          const res = await egressFetch(policy, 'url')(url);
          expect(res.status).toBe(204);
        } else {
          const res = await upstreams.fetch(url, { method: 'GET', headers: {}, signal: new AbortController().signal });
          expect(res.status).toBe(204);
          res.discard();
        }
        answered++;
      } catch (err) {
        expect(err).toMatchObject(refusedNaming('url'));
        refused++;
      }
    };
    // 200 requests, 8 at a time: each opens its own connection (the server closes them), so each is a lookup.
    for (let batch = 0; batch < 25; batch++) await Promise.all(Array.from({ length: 8 }, one));
    upstreams.close();
    expect(pair.forbiddenConnections() - before).toBe(0);
    expect(answered + refused).toBe(200);
    expect(answered).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(dns.forbiddenAnswers);
  });

  describe('through create_inbound_server', () => {
    let t: TestApp;
    let ws: CreatedWorkspace;
    const dns = new TestDns();
    beforeAll(async () => {
      t = await startTestApp({ EGRESS_ALLOWED_CIDRS: ALLOWED_CIDRS.join(',') });
      t.runtime.services.egress = new EgressPolicy(ALLOWED_CIDRS, dns.resolve);
      ws = await newWorkspace(t);
    });
    afterAll(async () => {
      await closeClients();
      await t?.close();
    });

    it.each(SURFACES)('refuses every address form at creation on %s, written as an address and as a name', async (surface) => {
      for (const [i, [address, what]] of FORMS.entries()) {
        for (const url of [literalUrl(address, 8080), `http://${nameOf(i)}:8080/mcp`]) {
          const res = await invoke(t, surface, ws.token, 'create_inbound_server', { name: 'forbidden', url, authType: 'none' });
          expect(res.status, `${what}: ${url}`).toBe(400);
          expect(res.body).toMatchObject({ code: 'validation_failed', errors: [expect.objectContaining({ path: 'url' })] });
        }
      }
      const rows = await t.runtime.services.db.selectFrom('inbound_servers').select('guid').where('name', '=', 'forbidden').execute();
      expect(rows).toEqual([]);
    });

    it('40 servers on a flipping name: none is ever validated against the forbidden address', async () => {
      const before = pair.forbiddenConnections();
      const outcomes = { refusedAtCreation: 0, validated: 0, refusedAtConnect: 0 };
      for (let i = 0; i < 40; i++) {
        const surface = SURFACES[i % SURFACES.length]!;
        const res = await invoke(t, surface, ws.token, 'create_inbound_server', {
          name: `flip-${i}`,
          url: `http://flip.egress.test:${pair.port}/mcp`,
          authType: 'none',
        });
        if (res.status === 400) {
          expect(res.body.errors[0]).toMatchObject({ path: 'url', message: expect.stringContaining(FORBIDDEN) });
          outcomes.refusedAtCreation++;
          continue;
        }
        expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
        const row = await validated(t, res.body.guid);
        if (row.status_reason === null) {
          expect(row.features).toMatchObject({ tools: [expect.objectContaining({ name: 'ping' })] });
          outcomes.validated++;
        } else {
          expect(row.status_reason).toContain(`is a loopback address not allowed by EGRESS_ALLOWED_CIDRS (it resolves to ${FORBIDDEN})`);
          outcomes.refusedAtConnect++;
        }
      }
      expect(pair.forbiddenConnections() - before).toBe(0);
      expect(outcomes.refusedAtCreation + outcomes.validated + outcomes.refusedAtConnect).toBe(40);
      // The race was run: the forbidden address was answered after a creation check had passed.
      expect(outcomes.refusedAtConnect).toBeGreaterThan(0);
      expect(outcomes.refusedAtCreation).toBeGreaterThan(0);
      expect(dns.forbiddenAnswers).toBeGreaterThan(outcomes.refusedAtCreation);
    });
  });
});
