/**
 * The service under test of bench:gateway, in a process of its own (started by
 * bench/gateway.ts with an IPC channel): opens the runtime on a fresh data dir the
 * way src/main.ts does, listens twice on loopback (call logging on, and off to show
 * what logging costs), provisions one gateway in front of the upstream it is given,
 * and answers the parent's messages:
 *
 *   ready   (sent once)  { withLogs, withoutLogs, path, token }
 *   cpu     -> { cpu, loop }  CPU time in µs (user + system) of the whole process
 *                        (process.cpuUsage: also chDB's and libuv's threads) and of
 *                        the event-loop thread alone (process.threadCpuUsage)
 *   flush   -> {}        call logs flushed into ClickHouse
 *   close   -> exits
 *
 * Environment: BENCH_UPSTREAM_URL and BENCH_MODERN_UPSTREAM_URL (a 2026-07-28-only
 * upstream, behind a gateway of its own) (required); BENCH_PROFILE_DIR: a V8 CPU profile of
 * the process from ready to close is written there (setup and start-up left out);
 * BENCH_ALLOCATIONS_DIR: a sampling heap profile of the same stretch, every allocation
 * counted, those the garbage collector has since taken included (what a call allocates
 * is what the collector then costs it).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { CallLogSink } from '../src/core/logs/call-log-writer.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';

export interface GatewayServiceReady {
  type: 'ready';
  withLogs: string;
  withoutLogs: string;
  path: string;
  token: string;
  /** A second gateway to the same upstream whose assignment carries 50 tool filters and 50 overrides (none touching echo). */
  curatedPath: string;
  curatedToken: string;
  /** A third gateway, in front of the 2026-07-28 upstream alone (BENCH_MODERN_UPSTREAM_URL). */
  modernPath: string;
  modernToken: string;
}

const upstreamUrl = process.env.BENCH_UPSTREAM_URL;
const modernUpstreamUrl = process.env.BENCH_MODERN_UPSTREAM_URL;
if (!upstreamUrl || !modernUpstreamUrl || !process.send)
  throw new Error('bench/gateway-service.ts is started by bench/gateway.ts (BENCH_UPSTREAM_URL, BENCH_MODERN_UPSTREAM_URL and an IPC channel).');
const send = (message: unknown) => process.send!(message);

const { config, dataDir } = benchConfig('gateway', {
  EGRESS_ALLOWED_CIDRS: '127.0.0.0/8',
  GATEWAY_RATE_LIMIT_PER_CONNECTION_PER_MINUTE: '0',
  GATEWAY_RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '0',
});
const runtime = await openRuntime(config, { logger: silentLogger });
const noLogs: CallLogSink = {
  write: async () => undefined,
  writeEncoded: async () => undefined,
  flush: async () => undefined,
  catchUp: async () => undefined,
  close: async () => undefined,
  encoding: { sensitiveHeaderNames: [] },
};
const withLogs = await buildApp({ services: runtime.services, logger: false });
const withoutLogs = await buildApp({ services: { ...runtime.services, callLogs: noLogs }, logger: false });
await withLogs.listen({ port: 0, host: '127.0.0.1' });
await withoutLogs.listen({ port: 0, host: '127.0.0.1' });
const urlOf = (app: typeof withLogs) => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

const ws = await createWorkspace(runtime.services.db, { name: 'bench', adminEmail: 'bench@example.test' });
const api = async (url: string, body: unknown) => {
  const res = await withLogs.inject({
    method: 'POST',
    url: `/api/v1/svc-admin${url}`,
    headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (res.statusCode >= 300) throw new Error(`${url}: ${res.body}`);
  return res.json();
};
const server = await api('/servers', { name: 'everything', url: upstreamUrl, authType: 'none' });
await runtime.services.serverValidation.settled(server.guid);
const gateway = await api('/gateways', { name: 'bench' });
await api(`/gateways/${gateway.guid}/assignments`, { inboundServerGuid: server.guid });
const issued = await api(`/gateways/${gateway.guid}/tokens`, {});
// Curation's cost on a call: 50 deny globs and 50 overrides of other tools, the same echo through it.
const curated = await api('/gateways', { name: 'bench curated' });
await api(`/gateways/${curated.guid}/assignments`, {
  inboundServerGuid: server.guid,
  toolFilter: { mode: 'deny', tools: Array.from({ length: 50 }, (_, i) => `never_${i}_*`) },
  toolOverrides: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`absent_${i}`, { name: `renamed_${i}`, description: `renamed tool ${i}` }])),
});
const curatedIssued = await api(`/gateways/${curated.guid}/tokens`, {});
// A 2026-07-28 call end to end: no session on either side of the gateway.
const modernServer = await api('/servers', { name: 'modern', url: modernUpstreamUrl, authType: 'none' });
await runtime.services.serverValidation.settled(modernServer.guid);
const modernGateway = await api('/gateways', { name: 'bench modern' });
await api(`/gateways/${modernGateway.guid}/assignments`, { inboundServerGuid: modernServer.guid });
const modernIssued = await api(`/gateways/${modernGateway.guid}/tokens`, {});

const profileDir = process.env.BENCH_PROFILE_DIR;
const allocationsDir = process.env.BENCH_ALLOCATIONS_DIR;
const inspector = profileDir || allocationsDir ? new Session() : null;
inspector?.connect();
if (inspector && profileDir) {
  await inspector.post('Profiler.enable');
  await inspector.post('Profiler.start');
}
if (inspector && allocationsDir) {
  await inspector.post('HeapProfiler.enable');
  await inspector.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}

/** Writes a profile the inspector took into `dir`, named by the time it ends. */
function writeProfile(dir: string, extension: string, profile: unknown): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `gateway-${Date.now()}.${extension}`), JSON.stringify(profile));
}

async function close(): Promise<never> {
  if (inspector && profileDir) writeProfile(profileDir, 'cpuprofile', (await inspector.post('Profiler.stop')).profile);
  if (inspector && allocationsDir) writeProfile(allocationsDir, 'heapprofile', (await inspector.post('HeapProfiler.stopSampling')).profile);
  await withLogs.close();
  await withoutLogs.close();
  await runtime.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
}

process.on('message', (message: { type: string }) => {
  if (message.type === 'cpu') {
    const all = process.cpuUsage();
    const loop = process.threadCpuUsage();
    send({ type: 'cpu', cpu: all.user + all.system, loop: loop.user + loop.system });
  } else if (message.type === 'flush') {
    void runtime.services.callLogs.flush().then(() => send({ type: 'flushed' }));
  } else if (message.type === 'close') void close();
});
process.on('disconnect', () => void close());
send({
  type: 'ready',
  withLogs: urlOf(withLogs),
  withoutLogs: urlOf(withoutLogs),
  path: `/gateways/${gateway.guid}/mcp`,
  token: issued.token,
  curatedPath: `/gateways/${curated.guid}/mcp`,
  curatedToken: curatedIssued.token,
  modernPath: `/gateways/${modernGateway.guid}/mcp`,
  modernToken: modernIssued.token,
} satisfies GatewayServiceReady);
