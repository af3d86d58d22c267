import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { gatewayClient, legacySseClient } from './helpers/gateway.js';
import { mcp2026Client, mcpClient, newWorkspace } from './helpers/harness.js';
import { startTwoEraGateway, type TwoEraGateway } from './helpers/two-era-gateway.js';

/**
 * A gateway's lists (and the admin endpoint's tool list) come whole, in one page with no
 * nextCursor, so a cursor is one they never issued: "Invalid cursors SHOULD result in an
 * error with code -32602 (Invalid params)" (MCP, pagination), not the whole list again.
 * Real hosts: the 1.x SDK client on Streamable HTTP and on the legacy /sse endpoint, the v2
 * client pinned to 2026-07-28; server-everything and the v2-SDK fixture behind.
 */
let g: TwoEraGateway;

beforeAll(async () => {
  g = await startTwoEraGateway('Cursors');
}, 60_000);
afterAll(async () => {
  await g?.close();
});

/** What any list host does: the four lists, each with and without a cursor. */
interface Lister {
  list(method: string, cursor?: string): Promise<Record<string, unknown>>;
  close(): Promise<unknown>;
}

const fromClient = (client: Client | Client2026): Lister => {
  const c = client as any;
  const call: Record<string, (p: object) => Promise<Record<string, unknown>>> = {
    'tools/list': (p) => c.listTools(p),
    'prompts/list': (p) => c.listPrompts(p),
    'resources/list': (p) => c.listResources(p),
    'resources/templates/list': (p) => c.listResourceTemplates(p),
  };
  return { list: (method, cursor) => call[method]!(cursor === undefined ? {} : { cursor }), close: () => client.close() };
};

const HOSTS: [string, () => Promise<Lister>][] = [
  ['a 2025 host (Streamable HTTP)', async () => fromClient(await gatewayClient(g.url, g.token))],
  ['a 2025 host (legacy HTTP+SSE)', async () => fromClient(await legacySseClient(g.url.replace(/\/mcp$/, '/sse'), g.token))],
  [
    'a 2026-07-28 host',
    async () => {
      const client = new Client2026({ name: 'cursor-host', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(new Transport2026(new URL(g.url), { requestInit: { headers: { authorization: `Bearer ${g.token}` } } }));
      return fromClient(client);
    },
  ],
];

describe('a cursor the gateway did not issue', () => {
  it.each(HOSTS)('is invalid params for %s, on each of the four lists, which come in one page', async (_, connect) => {
    const host = await connect();
    try {
      for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
        const whole = await host.list(method);
        expect(whole.nextCursor).toBeUndefined();
        const err = (await host.list(method, 'bogus').catch((e: unknown) => e)) as { code?: number; message?: string };
        expect(err, method).toMatchObject({ code: -32602, message: expect.stringMatching(/params.cursor was not issued by this server/) });
      }
    } finally {
      await host.close();
    }
  });
});

describe("a cursor on the admin endpoint's tools/list", () => {
  it('is invalid params in both revisions', async () => {
    const ws = await newWorkspace(g.t);
    for (const client of [await mcpClient(g.t, ws.token), await mcp2026Client(g.t, ws.token)]) {
      const host = fromClient(client);
      try {
        expect((await host.list('tools/list')).nextCursor).toBeUndefined();
        const err = (await host.list('tools/list', 'bogus').catch((e: unknown) => e)) as { code?: number };
        expect(err).toMatchObject({ code: -32602 });
      } finally {
        await host.close();
      }
    }
  });
});
