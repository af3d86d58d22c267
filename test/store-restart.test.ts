import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { storeKind } from './helpers/harness.js';
import { gatewayClient } from './helpers/gateway.js';
import { initialAdminToken, scratchDataDir, serviceEnv, startService, stopService, TSX, type ServiceProcess } from './helpers/service-process.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';
import { freePort } from './helpers/ports.js';

/**
 * A Postgres server restarting, then away for 10 s, under admin and gateway traffic,
 * against the real service process: the process survives, answers 503 (never a 500,
 * never a hang) while the store is away, /healthz names it, the gateway keeps serving
 * the host it served, and everything works again within seconds of the store's return. The server is a private instance (initdb in a temporary
 * directory, loopback only) so restarting it disturbs no other test file. Runs once, in
 * the Postgres project, where the server binaries exist and the test may run them as
 * the postgres user (CI runs as root).
 */
const PG_VERSION = fs.existsSync('/etc/postgresql') ? fs.readdirSync('/etc/postgresql').sort().at(-1) : undefined;
const PG_BIN = PG_VERSION ? `/usr/lib/postgresql/${PG_VERSION}/bin` : '';
const canRun = storeKind() === 'postgres' && PG_VERSION !== undefined && fs.existsSync(`${PG_BIN}/initdb`) && process.getuid?.() === 0;

const run = promisify(execFile);
const ADMIN = '/api/v1/svc-admin';
const REQUEST_TIMEOUT_MS = 15_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Postgres cluster of its own, run as the postgres user. */
class PrivatePostgres {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpgw-pg-'));
  readonly data = path.join(this.dir, 'data');
  constructor(readonly port: number) {
    const { uid, gid } = fs.statSync('/var/lib/postgresql');
    fs.chownSync(this.dir, uid, gid);
  }
  init(): Promise<void> {
    return this.asPostgres('initdb', ['-D', this.data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync']);
  }
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }
  start(): Promise<void> {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`;
    return this.asPostgres('pg_ctl', ['-D', this.data, '-l', path.join(this.dir, 'log'), '-w', '-o', opts, 'start']);
  }
  restart(): Promise<void> {
    return this.asPostgres('pg_ctl', ['-D', this.data, '-w', '-m', 'fast', 'restart']);
  }
  stop(): Promise<void> {
    return this.asPostgres('pg_ctl', ['-D', this.data, '-w', '-m', 'fast', 'stop']);
  }
  async remove(): Promise<void> {
    await this.stop().catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
  /** Runs a server binary as the postgres user (the server refuses to run as root); the event loop keeps serving meanwhile. */
  private asPostgres(command: string, args: string[]): Promise<void> {
    // stdio ignored: the server pg_ctl starts would otherwise hold the pipes open, and 'close' never come.
    const child = spawn('runuser', ['-u', 'postgres', '--', `${PG_BIN}/${command}`, ...args], { cwd: this.dir, stdio: 'ignore' });
    return new Promise((resolve, reject) =>
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.at(-1)} exited with ${code}`)))),
    );
  }
}

type Phase = 'before' | 'restart' | 'away' | 'back';

describe.runIf(canRun)('a Postgres server that restarts, then goes away for 10 s, under traffic', () => {
  let pgServer: PrivatePostgres;
  let everything: Upstream;
  let service: ServiceProcess;
  let base: string;
  let token: string;
  /** The admin traffic's caller: a workspace of its own, so its writes' change notices never drop the gateway's cached entries. */
  let trafficToken: string;
  let host: Client;
  let gatewayGuid: string;
  const children: ChildProcess[] = [];
  const dataDir = scratchDataDir('mcpgw-restart-');

  const admin = async (method: 'GET' | 'POST', route: string, body?: unknown, as = token) => {
    const res = await fetch(`${base}${ADMIN}${route}`, {
      method,
      headers: { authorization: `Bearer ${as}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    return { status: res.status, body: (await res.json()) as any, retryAfter: res.headers.get('retry-after') };
  };

  beforeAll(async () => {
    pgServer = new PrivatePostgres(await freePort());
    await pgServer.init();
    await pgServer.start();
    everything = await startEverything('streamableHttp');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: pgServer.url, SECRET_KEY: crypto.randomBytes(32).toString('base64'), EGRESS_ALLOWED_CIDRS: '127.0.0.0/8' };
    service = await startService(dataDir(), port, children, env);
    token = initialAdminToken(service.output())!;
    expect(token).toMatch(/^svcp_/);
    // The operator CLI, through the running service's admin socket.
    const { stdout } = await run(TSX, ['src/cli/admin.ts', 'create-workspace', '--name', 'Traffic', '--admin-email', 'ops@traffic.test', '--json'], {
      env: { ...serviceEnv(dataDir(), port), ...env },
    });
    trafficToken = JSON.parse(stdout.trim().split('\n').pop()!).token;
    expect(trafficToken).toMatch(/^svcp_/);
    const server = await admin('POST', '/servers', { name: 'Everything', url: everything.url, authType: 'none' });
    expect(server.status).toBe(201);
    const gateway = await admin('POST', '/gateways', { name: 'Restart gateway' });
    gatewayGuid = gateway.body.guid;
    expect((await admin('POST', `/gateways/${gateway.body.guid}/assignments`, { inboundServerGuid: server.body.guid })).status).toBe(201);
    const issued = await admin('POST', `/gateways/${gateway.body.guid}/tokens`, {});
    expect(issued.status).toBe(201);
    host = await gatewayClient(issued.body.url.replace(/^https?:\/\/[^/]+/, base), issued.body.token);
    // Feature-learning runs after creation: the tool appears once it has.
    for (let i = 0; i < 100; i++) {
      if ((await host.listTools()).tools.some((tool) => tool.name === 'everything__echo')) break;
      await sleep(200);
    }
  }, 180_000);

  afterAll(async () => {
    await host?.close().catch(() => undefined);
    for (const child of children) await stopService(child, 'SIGKILL');
    await everything?.close();
    await pgServer?.remove();
  });

  it('survives, answers 503 while the store is away, and serves again within seconds of its return', async () => {
    let phase: Phase = 'before';
    let running = true;
    const adminAnswers: { phase: Phase; status: number; code?: string; retryAfter: string | null }[] = [];
    const gatewayAnswers: { phase: Phase; ok: boolean }[] = [];
    const hangs: string[] = [];

    const adminTraffic = async () => {
      for (let n = 0; running; n++) {
        try {
          const res = n % 2 === 0 ? await admin('GET', '/teams', undefined, trafficToken) : await admin('POST', '/teams', { name: `team ${n}` }, trafficToken);
          adminAnswers.push({ phase, status: res.status, code: res.body?.code, retryAfter: res.retryAfter });
        } catch (err) {
          hangs.push(`admin: ${String(err)}`);
        }
        await sleep(50);
      }
    };
    const gatewayTraffic = async () => {
      for (let n = 0; running; n++) {
        try {
          const result = await host.callTool({ name: 'everything__echo', arguments: { message: `m${n}` } }, undefined, { timeout: REQUEST_TIMEOUT_MS });
          gatewayAnswers.push({ phase, ok: !result.isError });
        } catch (err) {
          if (/timed out/i.test(String(err))) hangs.push(`gateway: ${String(err)}`);
          gatewayAnswers.push({ phase, ok: false });
        }
        await sleep(50);
      }
    };
    const traffic = Promise.all([adminTraffic(), gatewayTraffic()]);

    await sleep(1500);
    phase = 'restart';
    await pgServer.restart();
    await sleep(3000);
    phase = 'away';
    await pgServer.stop();
    await sleep(3000);
    const health = await fetch(`${base}/healthz`);
    const healthBody = (await health.json()) as { down?: string[] };
    await sleep(7000);
    await pgServer.start();
    phase = 'back';
    const backAt = Date.now();
    let recoveredMs = -1;
    while (Date.now() - backAt < 30_000) {
      const recentAdmin = adminAnswers.filter((a) => a.phase === 'back').slice(-2);
      const recentGateway = gatewayAnswers.filter((a) => a.phase === 'back').slice(-2);
      if (recentAdmin.length === 2 && recentAdmin.every((a) => a.status < 300) && recentGateway.length === 2 && recentGateway.every((a) => a.ok)) {
        recoveredMs = Date.now() - backAt;
        break;
      }
      await sleep(100);
    }
    await sleep(1000);
    running = false;
    await traffic;

    const count = (phase: Phase) => {
      const a = adminAnswers.filter((x) => x.phase === phase);
      const g = gatewayAnswers.filter((x) => x.phase === phase);
      return `${phase}: admin ${a.filter((x) => x.status < 300).length} ok / ${a.filter((x) => x.status === 503).length} 503 / ${a.length}, gateway ${g.filter((x) => x.ok).length} ok / ${g.length}`;
    };
    console.error(`store restart: ${(['before', 'restart', 'away', 'back'] as Phase[]).map(count).join('; ')}; recovered in ${recoveredMs} ms`);

    expect(service.child.exitCode).toBeNull();
    expect(service.child.signalCode).toBeNull();
    expect(hangs).toEqual([]);
    // Every admin answer is a success or a 503 the caller may retry: never a 500.
    for (const a of adminAnswers) {
      expect([200, 201, 503]).toContain(a.status);
      if (a.status === 503) expect(a).toMatchObject({ code: 'unavailable', retryAfter: '5' });
    }
    expect(adminAnswers.some((a) => a.phase === 'away' && a.status === 503)).toBe(true);
    expect(health.status).toBe(503);
    expect(healthBody.down).toEqual(['postgres']);
    expect(recoveredMs).toBeGreaterThanOrEqual(0);
    // The gateway keeps serving the caller and routes it served (its caches), whatever the store does.
    expect(gatewayAnswers.filter((a) => a.phase !== 'before').every((a) => a.ok)).toBe(true);
    // Traffic before the faults was all served.
    expect(adminAnswers.filter((a) => a.phase === 'before').every((a) => a.status < 300)).toBe(true);
    expect(gatewayAnswers.filter((a) => a.phase === 'before').every((a) => a.ok)).toBe(true);
    expect(service.output()).not.toMatch(/Unhandled 'error' event|uncaughtException/);
    // Every call the gateway answered is in the call log (which is ClickHouse's, spooled: the outage loses none).
    const served = gatewayAnswers.filter((a) => a.ok).length;
    let logged = 0;
    for (let i = 0; i < 50 && logged < served; i++) {
      const page = await admin('POST', '/logs/query', { filters: { outbound_gateway_guid: gatewayGuid }, take: 1000 });
      logged = page.body.items.filter((row: any) => row.tool_name === 'echo' && row.status === 'ok').length;
      if (logged < served) await sleep(200);
    }
    expect(logged).toBe(served);
  }, 120_000);
});
