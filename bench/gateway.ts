/**
 * bench:gateway — tools/call echo against server-everything (Streamable HTTP, on
 * loopback), direct to the upstream and through the gateway (with call logging on,
 * and with it off to show what logging costs), sequentially and at concurrency 16,
 * in one run: calls/s, p50/p99 latency and the ratios. Figures only, never assertions.
 *
 *   npm run bench:gateway [-- --seconds 5 --concurrency 16]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import type { CallLogSink } from '../src/core/logs/call-log-writer.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { startEverything } from '../test/helpers/upstreams.js';
import { mcpToolLoad, type LoadFigures } from './mcp-load.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '16' } } });
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const silent = { info() {}, warn() {}, debug() {}, error: (o: unknown) => console.error(o) };
/** tools/call echo against `url` from `concurrency` clients, after a warm-up of 20 calls each. */
const load = (url: string, headers: Record<string, string>, tool: string, concurrency: number): Promise<LoadFigures> =>
  mcpToolLoad({ url, headers, tool, args: { message: 'hello' }, concurrency, seconds, warmupCalls: 20 });

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-gateway-'));
  const upstream = await startEverything('streamableHttp');
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
    EGRESS_ALLOWED_CIDRS: '127.0.0.0/8',
    GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: '0',
    GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '0',
  });
  const runtime = await openRuntime(config, { logger: silent });
  const noLogs: CallLogSink = { write: async () => undefined, flush: async () => undefined, close: async () => undefined };
  const withLogs = await buildApp({ services: runtime.services, logger: false });
  const withoutLogs = await buildApp({ services: { ...runtime.services, callLogs: noLogs }, logger: false });
  await withLogs.listen({ port: 0, host: '127.0.0.1' });
  await withoutLogs.listen({ port: 0, host: '127.0.0.1' });
  const urlOf = (app: typeof withLogs) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  try {
    const ws = await createWorkspace(runtime.services.db, { name: 'bench', adminEmail: 'bench@example.test' });
    const admin = { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' };
    const api = async (method: 'POST', url: string, body: unknown) => {
      const res = await withLogs.inject({ method, url: `/api/v1/svc-admin${url}`, headers: admin, payload: JSON.stringify(body) });
      if (res.statusCode >= 300) throw new Error(`${url}: ${res.body}`);
      return res.json();
    };
    const server = await api('POST', '/servers', { name: 'everything', url: upstream.url, authType: 'none' });
    await runtime.services.serverValidation.settled(server.guid);
    const gateway = await api('POST', '/gateways', { name: 'bench' });
    await api('POST', `/gateways/${gateway.guid}/assignments`, { inboundServerGuid: server.guid });
    const issued = await api('POST', `/gateways/${gateway.guid}/tokens`, {});
    const gatewayHeaders = { authorization: `Bearer ${issued.token}` };
    const path = `/gateways/${gateway.guid}/mcp`;

    const rows: { target: string; concurrency: number; figures: LoadFigures }[] = [];
    for (const c of [1, concurrency]) {
      rows.push({ target: 'direct', concurrency: c, figures: await load(upstream.url, {}, 'echo', c) });
      rows.push({ target: 'gateway (logging on)', concurrency: c, figures: await load(urlOf(withLogs) + path, gatewayHeaders, 'everything__echo', c) });
      rows.push({ target: 'gateway (logging off)', concurrency: c, figures: await load(urlOf(withoutLogs) + path, gatewayHeaders, 'everything__echo', c) });
    }
    await runtime.services.callLogs.flush();
    console.log(`\nbench:gateway — tools/call echo, server-everything (Streamable HTTP) on loopback, ${seconds} s per row\n`);
    console.log('target                  conc   calls/s    p50 ms    p99 ms');
    for (const r of rows) {
      console.log(`${r.target.padEnd(22)} ${String(r.concurrency).padStart(5)} ${r.figures.rps.toFixed(0).padStart(9)} ${r.figures.p50.toFixed(2).padStart(9)} ${r.figures.p99.toFixed(2).padStart(9)}`);
    }
    for (const c of [1, concurrency]) {
      const pick = (target: string) => rows.find((r) => r.target === target && r.concurrency === c)!.figures;
      const direct = pick('direct');
      const on = pick('gateway (logging on)');
      const off = pick('gateway (logging off)');
      console.log(
        `\nconcurrency ${c}: gateway/direct calls/s ${(on.rps / direct.rps).toFixed(2)}, added p50 ${(on.p50 - direct.p50).toFixed(2)} ms, ` +
          `logging cost ${(((off.rps - on.rps) / off.rps) * 100).toFixed(1)}% of throughput`,
      );
    }
  } finally {
    await withLogs.close();
    await withoutLogs.close();
    await runtime.close();
    await upstream.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
