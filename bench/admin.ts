/**
 * bench:admin — whoami and list_teams over REST (autocannon) and over MCP (SDK client),
 * requests per second and p50/p99 latency, on PGlite and, when DATABASE_URL is set,
 * on that Postgres server; and what the audit record costs a write operation (audit
 * on vs off in the same run). Figures only, never assertions.
 *
 *   npm run bench:admin [-- --seconds 5 --connections 10]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';
import { mcpToolLoad } from './mcp-load.js';
import { median } from './stats.js';
import type { Services } from '../src/core/services.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '10' } } });
const seconds = Number(values.seconds);
const connections = Number(values.connections);

interface Row {
  store: string;
  surface: string;
  operation: string;
  concurrency: number;
  rps: number;
  p50: number;
  p99: number;
}

/** autocannon in its own process, so the load generator does not share the service's event loop. */
async function loadRest(url: string, token: string) {
  const { stdout } = await promisify(execFile)(
    path.resolve('node_modules/.bin/autocannon'),
    ['-j', '-c', String(connections), '-d', String(seconds), '-H', `authorization=Bearer ${token}`, url],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as { non2xx: number; errors: number; requests: { average: number }; latency: { p50: number; p99: number } };
}

async function benchStore(store: 'pglite' | 'postgres'): Promise<Row[]> {
  const { config, dataDir } = benchConfig('admin', {
    LOG_LEVEL: 'warn',
    ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
    ...(store === 'postgres' ? { DATABASE_URL: process.env.DATABASE_URL! } : {}),
  });
  const runtime = await openRuntime(config, { logger: silentLogger });
  const app = await buildApp({ services: runtime.services, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1/svc-admin`;
  const ws = await createWorkspace(runtime.services.db, { name: 'bench', adminEmail: `bench-${Date.now()}@example.test` });
  for (const name of ['a', 'b', 'c', 'd', 'e']) {
    await fetch(`${base}/teams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
  }
  const rows: Row[] = [];
  for (const [operation, urlPath] of [
    ['whoami', '/whoami'],
    ['list_teams', '/teams'],
  ] as const) {
    const r = await loadRest(base + urlPath, ws.token);
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${operation}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    rows.push({ store, surface: 'rest', operation, concurrency: connections, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 });
    for (const concurrency of [1, connections]) {
      const m = await mcpToolLoad({ url: `${base}/mcp`, headers: { authorization: `Bearer ${ws.token}` }, tool: operation, args: {}, concurrency, seconds });
      rows.push({ store, surface: 'mcp', operation, concurrency, ...m });
    }
  }
  await app.close();
  auditRows.push(await benchAudit(runtime.services, store));
  await runtime.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  return rows;
}

/**
 * What auditing costs a write operation: rename_team over REST, one caller, with the
 * audit record written (as always) and with a sink that drops it, alternating in
 * blocks of 50 calls so both see the same machine. p50 of each, and the difference.
 */
async function benchAudit(services: Services, store: string): Promise<{ store: string; on: number; off: number; calls: number }> {
  const dropAudit: Services['audit'] = {
    write: async () => undefined,
    flush: async () => undefined,
    catchUp: async () => undefined,
    close: async () => undefined,
  };
  const apps = { on: await buildApp({ services, logger: false }), off: await buildApp({ services: { ...services, audit: dropAudit }, logger: false }) };
  const ws = await createWorkspace(services.db, { name: 'bench audit', adminEmail: `audit-${Date.now()}@example.test` });
  const team = await apps.on.inject({
    method: 'POST',
    url: '/api/v1/svc-admin/teams',
    headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'renamed-0' }),
  });
  const teamGuid = team.json().guid as string;
  const times = { on: [] as number[], off: [] as number[] };
  let n = 0;
  const until = performance.now() + seconds * 2000;
  while (performance.now() < until) {
    for (const mode of ['on', 'off'] as const) {
      for (let i = 0; i < 50; i++) {
        const started = performance.now();
        const res = await apps[mode].inject({
          method: 'PATCH',
          url: `/api/v1/svc-admin/teams/${teamGuid}/name`,
          headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ newName: `renamed-${++n}` }),
        });
        times[mode].push(performance.now() - started);
        if (res.statusCode !== 200) throw new Error(`rename_team: ${res.statusCode} ${res.body}`);
      }
    }
  }
  await apps.on.close();
  await apps.off.close();
  return { store, on: median(times.on), off: median(times.off), calls: times.on.length + times.off.length };
}

const auditRows: { store: string; on: number; off: number; calls: number }[] = [];
const rows = [...(await benchStore('pglite')), ...(process.env.DATABASE_URL ? await benchStore('postgres') : [])];
console.log(`\nbench:admin (${seconds} s per case, ${os.cpus().length} cores)\n`);
console.log('store     surface  operation   conc   req/s    p50 ms   p99 ms');
for (const r of rows) {
  console.log(
    `${r.store.padEnd(9)} ${r.surface.padEnd(8)} ${r.operation.padEnd(11)} ${String(r.concurrency).padStart(4)} ${r.rps.toFixed(0).padStart(7)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)}`,
  );
}
console.log('\nauditing a write operation (rename_team over REST, one caller, in-process, alternating blocks of 50):');
for (const r of auditRows) {
  console.log(
    `${r.store.padEnd(9)} audit on p50 ${r.on.toFixed(3)} ms, off p50 ${r.off.toFixed(3)} ms: auditing adds ${(r.on - r.off).toFixed(3)} ms (${r.calls} calls)`,
  );
}
process.exit(0);
