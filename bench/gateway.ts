/**
 * bench:gateway — tools/call echo against server-everything (Streamable HTTP, on
 * loopback), direct to the upstream and through the gateway (with call logging on,
 * and with it off to show what logging costs), sequentially and at concurrency 16,
 * in one run: calls/s, p50/p99 latency, the gateway's CPU time per call, the hosts'
 * (the load generator's: on 2 cores a host that costs more leaves the others less) and
 * the ratios. A bare node:http pass-through proxy in its own process (bench/pass-through-proxy.ts)
 * is measured in the same rounds: the floor any proxy hop has on this machine. So are a
 * host pinned to revision 2026-07-28 (no session) and the legacy SSE endpoint beside
 * mcp-hub's (the aggregator a user could pick instead), on the same upstream, their host
 * asking for the revision mcp-hub speaks (SSE_HOST_REVISION). And a call in revision
 * 2026-07-28 end to end, no session on either side: a v2-SDK upstream of its own
 * (bench/modern-upstream.ts) directly, through a pass-through proxy and through a
 * gateway, from hosts pinned to the revision. And hosts without an SDK (RawHost in
 * bench/mcp-load.ts) of both revisions through the gateway, the 2025 one through the
 * pass-through proxy too: the SDK clients cost a host different CPU per call (the v2
 * client more), which on 2 cores the gateway and the upstream go without; these hosts
 * cost the same in both revisions.
 * Every row also gives the CPU a call of each process the call crosses: the host (this
 * process), the hop (the gateway's own figure; the floor's and mcp-hub's from /proc) and
 * the upstream. At concurrency the cores are busy, so calls/s go as the inverse of their
 * sum, and the bench prints what CPU a call 0.90 of the floor's calls/s leaves the gateway.
 * Figures only, never assertions.
 *
 *   npm run bench:gateway [-- --seconds 5 --concurrency 16 --rounds 1 --profile DIR --allocations DIR --only 'direct,gateway (logging on)']
 *
 * Three processes, as in a deployment: this one (the load generator: SDK clients,
 * bench/mcp-load.ts), the gateway service (bench/gateway-service.ts: the runtime and
 * the fastify app, as src/main.ts opens them) and the upstream (server-everything).
 * Direct is client process -> upstream process; through the gateway it is client
 * process -> gateway process -> upstream process, with the same load generator and
 * the same upstream. (Running the gateway inside the load generator's process would
 * make 16 SDK clients and the gateway share one event loop, which no host and
 * gateway ever do, and charge the clients' work to the gateway.)
 *
 * With --rounds N every row is measured N times (every other round in reverse
 * order) and the medians are shown; ratios are the medians of the ratios within
 * each round. This machine's figures drift by tens of percent from one minute to
 * the next, so prefer --rounds 3 or more, and the CPU time per call (the gateway
 * process's, and its event loop's alone) over calls/s. --profile DIR writes a V8 CPU profile of the
 * gateway process under load into DIR (start-up and setup left out), --allocations DIR a
 * sampling heap profile of the same (every allocation, collected or not); --only measures
 * the rows named (comma-separated), e.g. to profile one of them alone.
 */
import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/ports.js';
import { startEverything } from '../test/helpers/upstreams.js';
import type { GatewayServiceReady } from './gateway-service.js';
import { mcpToolLoad, type HostKind, type LoadFigures } from './mcp-load.js';
import { processCpuUs } from './process-cpu.js';
import { median } from './stats.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '1' },
    profile: { type: 'string' },
    allocations: { type: 'string' },
    only: { type: 'string' },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
/** Sequentially, then at --concurrency (once when that is 1). */
const LEVELS = [...new Set([1, concurrency])];
const rounds = Number(values.rounds);
const here = path.dirname(fileURLToPath(import.meta.url));

type Target =
  | 'direct'
  | 'pass-through proxy'
  | 'gateway (logging on)'
  | 'gateway (logging off)'
  | 'gateway (curated)'
  | 'gateway (2026-07-28 host)'
  | 'gateway (SSE endpoint)'
  | 'mcp-hub (SSE endpoint)'
  | 'direct (2026-07-28)'
  | 'pass-through (2026-07-28)'
  | 'gateway (2026-07-28 both)'
  | 'pass-through (raw 2025 host)'
  | 'gateway (raw 2025 host)'
  | 'gateway (raw 2026-07-28 host)';
const ALL_TARGETS: Target[] = [
  'direct',
  'pass-through proxy',
  'gateway (logging on)',
  'gateway (logging off)',
  'gateway (curated)',
  'gateway (2026-07-28 host)',
  'gateway (SSE endpoint)',
  'mcp-hub (SSE endpoint)',
  'direct (2026-07-28)',
  'pass-through (2026-07-28)',
  'gateway (2026-07-28 both)',
  'pass-through (raw 2025 host)',
  'gateway (raw 2025 host)',
  'gateway (raw 2026-07-28 host)',
];
const TARGETS = ALL_TARGETS.filter((target) => !values.only || values.only.split(',').includes(target));
interface Row extends LoadFigures {
  /** CPU time of the gateway process per call, in µs (gateway rows only). */
  gatewayCpuUs: number | null;
  /** CPU time of the gateway's event-loop thread per call, in µs: the request path itself. */
  loopCpuUs: number | null;
  /** CPU time per call, in µs, of the hop between host and upstream (the gateway, the pass-through floor or mcp-hub); null when direct. */
  hopCpuUs: number | null;
  /** CPU time of the upstream process per call, in µs. */
  upstreamCpuUs: number;
}

/** Starts the gateway service in its own process and waits for its URLs. */
async function startGatewayService(upstreamUrl: string, modernUpstreamUrl: string) {
  const env = {
    ...process.env,
    BENCH_UPSTREAM_URL: upstreamUrl,
    BENCH_MODERN_UPSTREAM_URL: modernUpstreamUrl,
    ...(values.profile ? { BENCH_PROFILE_DIR: path.resolve(values.profile) } : {}),
    ...(values.allocations ? { BENCH_ALLOCATIONS_DIR: path.resolve(values.allocations) } : {}),
  };
  const child = fork(path.join(here, 'gateway-service.ts'), [], { execArgv: ['--import', 'tsx'], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      const onExit = (code: number | null) => reject(new Error(`the gateway service exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next<GatewayServiceReady>('ready');
  return {
    ready,
    cpuUs: async () => {
      const answer = next<{ cpu: number; loop: number }>('cpu');
      child.send({ type: 'cpu' });
      return answer;
    },
    flush: async () => {
      const answer = next('flushed');
      child.send({ type: 'flush' });
      await answer;
    },
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'close' });
      await exited;
    },
  };
}

/**
 * The peer a user could pick instead: mcp-hub (npm) aggregating the same upstream, serving
 * hosts over the legacy HTTP+SSE transport at /mcp. It listens on every interface, so it
 * runs with the tests' loopback preload; it tries to reach its marketplace at start (refused here).
 */
async function startMcpHub(upstreamUrl: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-mcp-hub-'));
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ mcpServers: { everything: { url: upstreamUrl } } }));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '-r',
      path.join(here, '../test/helpers/loopback-preload.cjs'),
      path.join(here, '../node_modules/mcp-hub/dist/cli.js'),
      '--port',
      String(port),
      '--config',
      config,
    ],
    { env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_STATE_HOME: dir, XDG_CONFIG_HOME: dir }, stdio: 'ignore' },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const health = await fetch(`${base}/api/health`).then(
      (r) => (r.ok ? (r.json() as Promise<{ servers?: { status?: string }[] }>) : null),
      () => null,
    );
    if (health?.servers?.some((x) => x.status === 'connected')) break;
    if (i > 300 || child.exitCode !== null) throw new Error('mcp-hub did not connect to the upstream');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `${base}/mcp`,
    pid: child.pid!,
    close: () => {
      child.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The 2026-07-28-only upstream (bench/modern-upstream.ts) in its own process, as server-everything is in its own. */
async function startModernUpstream() {
  const child = fork(path.join(here, 'modern-upstream.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the 2026-07-28 upstream exited with ${code}`)));
  });
  return { url, pid: child.pid!, close: () => child.kill() };
}

/** The floor: a bare node:http proxy in its own process (bench/pass-through-proxy.ts). */
async function startPassThroughProxy(upstreamUrl: string) {
  const child = fork(path.join(here, 'pass-through-proxy.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_UPSTREAM_URL: upstreamUrl },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the pass-through proxy exited with ${code}`)));
  });
  const upstream = new URL(upstreamUrl);
  return { url: `http://127.0.0.1:${port}${upstream.pathname}`, pid: child.pid!, close: () => child.kill() };
}

async function main(): Promise<void> {
  const upstream = await startEverything('streamableHttp');
  const proxy = await startPassThroughProxy(upstream.url);
  const modernUpstream = await startModernUpstream();
  const modernProxy = await startPassThroughProxy(modernUpstream.url);
  const hub = await startMcpHub(upstream.url);
  const service = await startGatewayService(upstream.url, modernUpstream.url);
  const { ready } = service;
  const gatewayHeaders = { authorization: `Bearer ${ready.token}` };
  /** The hop of each row whose hop is not the gateway (which reports its own CPU). */
  const hopPids: Partial<Record<Target, number>> = {
    'pass-through proxy': proxy.pid,
    'pass-through (raw 2025 host)': proxy.pid,
    'pass-through (2026-07-28)': modernProxy.pid,
    'mcp-hub (SSE endpoint)': hub.pid,
  };
  const modernUpstreamRows: Target[] = ['direct (2026-07-28)', 'pass-through (2026-07-28)', 'gateway (2026-07-28 both)'];
  /** A row's figures with the CPU a call of every process it crosses (the host's is the load generator's own). */
  const measure = async (target: Target, c: number): Promise<Row> => {
    const hop = hopPids[target] ?? null;
    const upstreamPid = modernUpstreamRows.includes(target) ? modernUpstream.pid : upstream.pid!;
    const [upstreamBefore, hopBefore] = [processCpuUs(upstreamPid), hop === null ? 0 : processCpuUs(hop)];
    const figures = await measureLoad(target, c);
    const calls = figures.rps * seconds;
    return {
      ...figures,
      upstreamCpuUs: (processCpuUs(upstreamPid) - upstreamBefore) / calls,
      hopCpuUs: hop === null ? figures.gatewayCpuUs : (processCpuUs(hop) - hopBefore) / calls,
    };
  };
  const measureLoad = async (target: Target, c: number): Promise<Omit<Row, 'hopCpuUs' | 'upstreamCpuUs'>> => {
    if (target === 'direct') {
      const before = await service.cpuUs();
      const started = performance.now();
      const figures = await load(upstream.url, {}, 'echo', c);
      idleCpu.push(((await service.cpuUs()).cpu - before.cpu) / ((performance.now() - started) * 1000));
      return { ...figures, gatewayCpuUs: null, loopCpuUs: null };
    }
    if (target === 'pass-through proxy') return { ...(await load(proxy.url, {}, 'echo', c)), gatewayCpuUs: null, loopCpuUs: null };
    if (target === 'pass-through (raw 2025 host)') return { ...(await load(proxy.url, {}, 'echo', c, 'raw 2025')), gatewayCpuUs: null, loopCpuUs: null };
    if (target === 'direct (2026-07-28)') return { ...(await load(modernUpstream.url, {}, 'echo', c, '2026-07-28')), gatewayCpuUs: null, loopCpuUs: null };
    if (target === 'pass-through (2026-07-28)') return { ...(await load(modernProxy.url, {}, 'echo', c, '2026-07-28')), gatewayCpuUs: null, loopCpuUs: null };
    if (target === 'mcp-hub (SSE endpoint)')
      return { ...(await load(hub.url, {}, 'everything__echo', c, 'sse', SSE_HOST_REVISION)), gatewayCpuUs: null, loopCpuUs: null };
    const base = target === 'gateway (logging off)' ? ready.withoutLogs : ready.withLogs;
    const [gatewayPath, headers, tool] =
      target === 'gateway (curated)'
        ? [ready.curatedPath, { authorization: `Bearer ${ready.curatedToken}` }, 'everything__echo']
        : target === 'gateway (SSE endpoint)'
          ? [ready.path.replace(/\/mcp$/, '/sse'), gatewayHeaders, 'everything__echo']
          : target === 'gateway (2026-07-28 both)'
            ? [ready.modernPath, { authorization: `Bearer ${ready.modernToken}` }, 'modern__echo']
            : [ready.path, gatewayHeaders, 'everything__echo'];
    const host: HostKind =
      target === 'gateway (2026-07-28 host)' || target === 'gateway (2026-07-28 both)'
        ? '2026-07-28'
        : target === 'gateway (SSE endpoint)'
          ? 'sse'
          : target === 'gateway (raw 2025 host)'
            ? 'raw 2025'
            : target === 'gateway (raw 2026-07-28 host)'
              ? 'raw 2026-07-28'
              : 'streamable-http';
    const before = await service.cpuUs();
    const figures = await load(base + gatewayPath, headers, tool, c, host, host === 'sse' ? SSE_HOST_REVISION : undefined);
    const after = await service.cpuUs();
    const calls = figures.rps * seconds;
    return { ...figures, gatewayCpuUs: (after.cpu - before.cpu) / calls, loopCpuUs: (after.loop - before.loop) / calls };
  };
  const samples = new Map<string, Row[]>();
  /** The gateway's CPU while it carries no calls (during direct rows), as a share of one core: its background work (forwarder, call-log inserts, caches). */
  const idleCpu: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const c of LEVELS) {
        // Every other round runs the rows in reverse, so that neither the machine's drift nor
        // the call-log inserts a logging-on row leaves behind (up to a second of them) favour one row.
        for (const target of round % 2 === 0 ? TARGETS : [...TARGETS].reverse()) {
          const key = `${target}|${c}`;
          samples.set(key, [...(samples.get(key) ?? []), await measure(target, c)]);
        }
      }
    }
    await service.flush();
  } finally {
    await service.close();
    proxy.close();
    modernProxy.close();
    modernUpstream.close();
    hub.close();
    await upstream.close();
  }
  const pick = (target: Target, c: number): Row => {
    const rows = samples.get(`${target}|${c}`)!;
    const cpu = rows.map((r) => r.gatewayCpuUs).filter((x): x is number => x !== null);
    const loop = rows.map((r) => r.loopCpuUs).filter((x): x is number => x !== null);
    return {
      rps: median(rows.map((r) => r.rps)),
      p50: median(rows.map((r) => r.p50)),
      p99: median(rows.map((r) => r.p99)),
      hostCpuUs: median(rows.map((r) => r.hostCpuUs)),
      gatewayCpuUs: cpu.length ? median(cpu) : null,
      loopCpuUs: loop.length ? median(loop) : null,
      hopCpuUs: rows[0]!.hopCpuUs === null ? null : median(rows.map((r) => r.hopCpuUs!)),
      upstreamCpuUs: median(rows.map((r) => r.upstreamCpuUs)),
    };
  };
  console.log(`\nbench:gateway — tools/call echo, server-everything (Streamable HTTP) on loopback, ${seconds} s per row, ${rounds} round(s), median shown`);
  console.log(
    `load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  console.log('target                          conc   calls/s    p50 ms    p99 ms   CPU µs/call: host    hop  upstream   gateway (process, event loop)');
  for (const c of LEVELS) {
    for (const target of TARGETS) {
      const r = pick(target, c);
      console.log(
        `${target.padEnd(30)} ${String(c).padStart(5)} ${r.rps.toFixed(0).padStart(9)} ${r.p50.toFixed(2).padStart(9)} ${r.p99.toFixed(2).padStart(9)} ${r.hostCpuUs.toFixed(0).padStart(18)} ${(r.hopCpuUs === null ? '-' : r.hopCpuUs.toFixed(0)).padStart(6)} ${r.upstreamCpuUs.toFixed(0).padStart(9)} ${r.gatewayCpuUs === null ? '' : `${r.gatewayCpuUs.toFixed(0).padStart(12)} ${r.loopCpuUs!.toFixed(0).padStart(6)}`}`,
      );
    }
  }
  if (idleCpu.length > 0) console.log(`\ngateway process while idle (during the direct rows): ${(median(idleCpu) * 100).toFixed(1)}% of a core`);
  // The ratios compare rows with each other: a run of some rows (--only) shows the rows alone.
  if (TARGETS.length < ALL_TARGETS.length) return;
  for (const c of LEVELS) {
    // Ratios are taken within each round (rows measured minutes apart share no conditions), then the median.
    const perRound = (f: (direct: Row, on: Row, off: Row) => number) =>
      median(
        samples
          .get(`direct|${c}`)!
          .map((direct, i) => f(direct, samples.get(`gateway (logging on)|${c}`)![i]!, samples.get(`gateway (logging off)|${c}`)![i]!)),
      );
    const ratio = perRound((direct, on) => on.rps / direct.rps);
    const floor = median(samples.get(`direct|${c}`)!.map((direct, i) => samples.get(`pass-through proxy|${c}`)![i]!.rps / direct.rps));
    const added = perRound((direct, on) => on.p50 - direct.p50);
    const logging = perRound((_direct, on, off) => (off.rps - on.rps) / off.rps);
    const loggingCpu = perRound((_direct, on, off) => on.gatewayCpuUs! - off.gatewayCpuUs!);
    const loggingLoop = perRound((_direct, on, off) => on.loopCpuUs! - off.loopCpuUs!);
    const curation = median(samples.get(`gateway (logging on)|${c}`)!.map((on, i) => samples.get(`gateway (curated)|${c}`)![i]!.rps / on.rps));
    const within = (a: Target, b: Target, f: (x: Row, y: Row) => number) =>
      median(samples.get(`${a}|${c}`)!.map((x, i) => f(x, samples.get(`${b}|${c}`)![i]!)));
    const modern = within('gateway (2026-07-28 host)', 'gateway (logging on)', (x, y) => x.rps / y.rps);
    const modernP50 = within('gateway (2026-07-28 host)', 'gateway (logging on)', (x, y) => x.p50 - y.p50);
    const overFloor = within('gateway (logging on)', 'pass-through proxy', (x, y) => x.rps / y.rps);
    const modernOverFloor = within('gateway (2026-07-28 host)', 'pass-through proxy', (x, y) => x.rps / y.rps);
    const addedOverFloor = within('gateway (logging on)', 'pass-through proxy', (x, y) => x.p50 - y.p50);
    const modernAddedOverFloor = within('gateway (2026-07-28 host)', 'pass-through proxy', (x, y) => x.p50 - y.p50);
    const hubRatio = within('gateway (SSE endpoint)', 'mcp-hub (SSE endpoint)', (x, y) => x.rps / y.rps);
    const hubP50 = within('gateway (SSE endpoint)', 'mcp-hub (SSE endpoint)', (x, y) => x.p50 - y.p50);
    const bothOverFloor = within('gateway (2026-07-28 both)', 'pass-through (2026-07-28)', (x, y) => x.rps / y.rps);
    const bothAddedOverFloor = within('gateway (2026-07-28 both)', 'pass-through (2026-07-28)', (x, y) => x.p50 - y.p50);
    const bothOverLegacy = within('gateway (2026-07-28 both)', 'gateway (logging on)', (x, y) => x.rps / y.rps);
    console.log(
      `\nconcurrency ${c}: 2026-07-28 host / 2025 host calls/s ${modern.toFixed(2)} (p50 ${modernP50 >= 0 ? '+' : ''}${modernP50.toFixed(2)} ms); ` +
        `gateway / pass-through floor calls/s ${overFloor.toFixed(2)} (2025 host), ${modernOverFloor.toFixed(2)} (2026-07-28 host); ` +
        `p50 added over the floor ${addedOverFloor.toFixed(2)} ms (2025), ${modernAddedOverFloor.toFixed(2)} ms (2026-07-28); ` +
        `gateway SSE / mcp-hub SSE calls/s ${hubRatio.toFixed(2)} (p50 ${hubP50 >= 0 ? '+' : ''}${hubP50.toFixed(2)} ms)`,
    );
    console.log(
      `\nconcurrency ${c}: 2026-07-28 host and upstream: gateway / its pass-through floor calls/s ${bothOverFloor.toFixed(2)}, ` +
        `p50 added over that floor ${bothAddedOverFloor.toFixed(2)} ms; gateway calls/s against a 2025 host and upstream ${bothOverLegacy.toFixed(2)}`,
    );
    const rawModern = within('gateway (raw 2026-07-28 host)', 'gateway (raw 2025 host)', (x, y) => x.rps / y.rps);
    const rawOverFloor = within('gateway (raw 2025 host)', 'pass-through (raw 2025 host)', (x, y) => x.rps / y.rps);
    const rawModernOverFloor = within('gateway (raw 2026-07-28 host)', 'pass-through (raw 2025 host)', (x, y) => x.rps / y.rps);
    const rawAdded = within('gateway (raw 2025 host)', 'pass-through (raw 2025 host)', (x, y) => x.p50 - y.p50);
    const rawModernAdded = within('gateway (raw 2026-07-28 host)', 'pass-through (raw 2025 host)', (x, y) => x.p50 - y.p50);
    console.log(
      `\nconcurrency ${c}: hosts without an SDK (the same host CPU for both revisions): 2026-07-28 / 2025 calls/s ${rawModern.toFixed(2)}; ` +
        `gateway / pass-through floor calls/s ${rawOverFloor.toFixed(2)} (2025), ${rawModernOverFloor.toFixed(2)} (2026-07-28); ` +
        `p50 added over the floor ${rawAdded.toFixed(2)} ms (2025), ${rawModernAdded.toFixed(2)} ms (2026-07-28)`,
    );
    console.log(
      `\nconcurrency ${c}: curated (50 filters, 50 overrides) / plain gateway calls/s ${curation.toFixed(2)}; gateway/direct calls/s ${ratio.toFixed(2)} (a bare pass-through proxy: ${floor.toFixed(2)}), added p50 ${added.toFixed(2)} ms, ` +
        `logging cost ${(logging * 100).toFixed(1)}% of throughput, ${loggingCpu.toFixed(0)} µs CPU per call (${loggingLoop.toFixed(0)} on the event loop)`,
    );
    if (c > 1) {
      console.log(
        `\nconcurrency ${c}: CPU a call of every process (host + hop + upstream, µs), the gateway against its floor; with the cores busy, ` +
          `calls/s go as the inverse of the sum, so 0.90 of the floor's calls/s leaves the gateway's hop the budget shown:`,
      );
      for (const [gateway, floorRow] of CPU_PAIRS) {
        const g = pick(gateway, c);
        const f = pick(floorRow, c);
        const budget = within(gateway, floorRow, (x, y) => cpuSum(y) / 0.9 - x.hostCpuUs - x.upstreamCpuUs);
        const cpuRatio = within(gateway, floorRow, (x, y) => cpuSum(y) / cpuSum(x));
        const callsRatio = within(gateway, floorRow, (x, y) => x.rps / y.rps);
        console.log(
          `  ${gateway.padEnd(30)} ${fmtSum(g)} against ${floorRow} ${fmtSum(f)}: CPU ratio ${cpuRatio.toFixed(2)}, calls/s ratio ${callsRatio.toFixed(2)}; ` +
            `hop budget for 0.90 ${budget.toFixed(0)} µs, the gateway took ${g.hopCpuUs!.toFixed(0)} (the floor's hop ${f.hopCpuUs!.toFixed(0)})`,
        );
      }
    }
  }
  if (rounds > 1) console.log('\n(ratios: median of the ratios within each round)');
}

/** Each gateway row with the pass-through row that is its floor (the same host kind where there is one). */
const CPU_PAIRS: [Target, Target][] = [
  ['gateway (logging on)', 'pass-through proxy'],
  ['gateway (2026-07-28 host)', 'pass-through proxy'],
  ['gateway (2026-07-28 both)', 'pass-through (2026-07-28)'],
  ['gateway (raw 2025 host)', 'pass-through (raw 2025 host)'],
  ['gateway (raw 2026-07-28 host)', 'pass-through (raw 2025 host)'],
];

/** The CPU a call of every process a row's call crosses, host, hop and upstream. */
const cpuSum = (r: Row) => r.hostCpuUs + r.hopCpuUs! + r.upstreamCpuUs;
const fmtSum = (r: Row) => `${r.hostCpuUs.toFixed(0)} + ${r.hopCpuUs!.toFixed(0)} + ${r.upstreamCpuUs.toFixed(0)} = ${cpuSum(r).toFixed(0)}`;

/**
 * The revision the legacy-SSE host asks both aggregators for: the one mcp-hub speaks (to its hosts and to the
 * upstream, whatever a host asks), so both carry the call in the same revision end to end. The gateway passes a
 * host's revision on, and from 2025-11-25 on server-everything opens each answer's stream with a priming event,
 * after which its HTTP layer (@hono/node-server) waits a timer tick (about 1 ms) for the next chunk before
 * writing anything: a 2025-11-25 host would measure that wait, not the aggregator (docs/gateway.md, "Measuring").
 */
const SSE_HOST_REVISION = '2025-06-18';

/** tools/call echo against `url` from `concurrency` clients of `host` kind, after a warm-up of 20 calls each. */
const load = (
  url: string,
  headers: Record<string, string>,
  tool: string,
  concurrency: number,
  host: HostKind = 'streamable-http',
  revision?: string,
): Promise<LoadFigures> => mcpToolLoad({ url, headers, tool, args: { message: 'hello' }, concurrency, seconds, warmupCalls: 20, host, revision });
const loadBefore = os.loadavg();

await main();
