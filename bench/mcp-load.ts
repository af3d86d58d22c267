import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { percentile } from './stats.js';

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
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
}): Promise<LoadFigures> {
  const clients = await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      const c = new Client({ name: 'bench', version: '1' });
      await c.connect(new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } }));
      return c;
    }),
  );
  for (const c of clients) for (let i = 0; i < (opts.warmupCalls ?? 0); i++) await c.callTool({ name: opts.tool, arguments: opts.args });
  const latencies: number[] = [];
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
  await Promise.all(clients.map((c) => c.close()));
  return { rps: latencies.length / opts.seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}
