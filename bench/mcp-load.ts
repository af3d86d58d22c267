import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { percentile } from './stats.js';

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  /** CPU time of this process (the hosts' side: SDK clients) per call, in µs. */
  hostCpuUs: number;
}

/**
 * Which host calls: a 2025 host over Streamable HTTP (the 1.x SDK, with a session),
 * a 2025 host over the legacy HTTP+SSE transport (1.x SDK), a host pinned to
 * revision 2026-07-28 (the v2 SDK: no initialize, no session), or a host of either
 * revision without an SDK (RawHost).
 */
export type HostKind = 'streamable-http' | 'sse' | '2026-07-28' | 'raw 2025' | 'raw 2026-07-28';

/** The revision a raw 2025 host asks for: the newest of 2025. */
const RAW_2025_REVISION = '2025-11-25';
const MODERN_ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/**
 * A host without an SDK: one fetch a call, its answer read as JSON or from an event
 * stream. The SDK clients cost the hosts different CPU per call (the v2 client more
 * than the 1.x one), which on 2 cores the gateway and the upstream go without; with
 * this host both revisions cost the host the same, so what differs between them
 * through a gateway is the gateway's.
 */
class RawHost implements ToolCaller {
  private sessionId: string | undefined;
  private nextId = 1;

  private constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly modern: boolean,
  ) {}

  static async open(url: string, headers: Record<string, string>, modern: boolean): Promise<RawHost> {
    const host = new RawHost(url, headers, modern);
    if (modern) return host;
    const init = { protocolVersion: RAW_2025_REVISION, capabilities: {}, clientInfo: { name: 'bench', version: '1' } };
    await host.request('initialize', init);
    await host.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, {});
    return host;
  }

  async callTool(params: { name: string; arguments: Record<string, unknown> }) {
    return (await this.request('tools/call', this.modern ? { ...params, _meta: MODERN_ENVELOPE } : params, params.name)) as Awaited<
      ReturnType<ToolCaller['callTool']>
    >;
  }

  async close(): Promise<void> {
    if (this.sessionId) await fetch(this.url, { method: 'DELETE', headers: { ...this.headers, 'mcp-session-id': this.sessionId } }).catch(() => undefined);
  }

  private async request(method: string, params: Record<string, unknown>, name?: string): Promise<unknown> {
    const id = this.nextId++;
    const routing: Record<string, string> = this.modern ? { 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) } : {};
    const answer = await this.post({ jsonrpc: '2.0', id, method, params }, routing);
    const text = await answer.text();
    const messages = answer.headers.get('content-type')?.startsWith('text/event-stream')
      ? // A priming event (2025-11-25) has empty data.
        text.split('\n').flatMap((line) => (line.startsWith('data:') && line.length > 6 ? [JSON.parse(line.slice(5)) as Record<string, unknown>] : []))
      : [JSON.parse(text) as Record<string, unknown>];
    const message = messages.find((m) => m.id === id);
    if (!message || message.error) throw new Error(`${method}: ${answer.status} ${text.slice(0, 200)}`);
    if (method === 'initialize') this.sessionId = answer.headers.get('mcp-session-id') ?? undefined;
    return message.result;
  }

  private post(body: Record<string, unknown>, routing: Record<string, string>): Promise<Response> {
    return fetch(this.url, {
      method: 'POST',
      headers: {
        ...this.headers,
        ...routing,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': this.modern ? '2026-07-28' : RAW_2025_REVISION,
        ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      },
      body: JSON.stringify(body),
    });
  }
}

interface ToolCaller {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<{ isError?: boolean; structuredContent?: unknown; content?: unknown }>;
  close(): Promise<void>;
}

async function connect(kind: HostKind, url: string, headers: Record<string, string>, revision?: string): Promise<ToolCaller> {
  if (kind === 'raw 2025' || kind === 'raw 2026-07-28') return RawHost.open(url, headers, kind === 'raw 2026-07-28');
  const requestInit = { headers };
  if (kind === '2026-07-28') {
    const c = new ModernClient({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await c.connect(new ModernTransport(new URL(url), { requestInit }));
    return c as unknown as ToolCaller;
  }
  const c = new Client({ name: 'bench', version: '1' });
  const transport: Transport =
    kind === 'sse'
      ? new SSEClientTransport(new URL(url), {
          requestInit,
          eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
        })
      : new StreamableHTTPClientTransport(new URL(url), { requestInit });
  if (revision) {
    // The 1.x client always asks for its latest revision: its initialize is rewritten to ask for `revision` instead.
    const send = transport.send.bind(transport);
    transport.send = (message, options) =>
      send(
        'method' in message && message.method === 'initialize' ? { ...message, params: { ...message.params, protocolVersion: revision } } : message,
        options,
      );
  }
  await c.connect(transport);
  return c as unknown as ToolCaller;
}

/**
 * Calls one MCP tool in a loop from `concurrency` SDK clients for `seconds`, after an
 * optional warm-up per client; answers calls/s and p50/p99 latency in ms. A tool
 * error stops the run: a benchmark of failures measures nothing.
 */
export async function mcpToolLoad(opts: {
  url: string;
  headers: Record<string, string>;
  tool: string;
  args: Record<string, unknown>;
  concurrency: number;
  seconds: number;
  warmupCalls?: number;
  host?: HostKind;
  /** The revision a 2025 host asks for in its initialize (default: the 1.x SDK's latest). */
  revision?: string;
}): Promise<LoadFigures> {
  const clients = await Promise.all(
    Array.from({ length: opts.concurrency }, () => connect(opts.host ?? 'streamable-http', opts.url, opts.headers, opts.revision)),
  );
  for (const c of clients) for (let i = 0; i < (opts.warmupCalls ?? 0); i++) await c.callTool({ name: opts.tool, arguments: opts.args });
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  const end = Date.now() + opts.seconds * 1000;
  await Promise.all(
    clients.map(async (c) => {
      while (Date.now() < end) {
        const t0 = performance.now();
        const r = await c.callTool({ name: opts.tool, arguments: opts.args });
        if (r.isError) throw new Error(JSON.stringify(r.structuredContent ?? r.content));
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  await Promise.all(clients.map((c) => c.close()));
  return {
    rps: latencies.length / opts.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    hostCpuUs: (cpu.user + cpu.system) / latencies.length,
  };
}
