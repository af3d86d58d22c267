/**
 * Runs the MCP conformance runner's server scenarios, for each protocol revision
 * (its `--requirements` list: the scored scenarios and the ones it runs unscored),
 * against an upstream directly and through a gateway, and prints one JSON line:
 * `{ [comparison]: { revision, upstream, direct: Results, gateway: Results } }` where
 * `Results` is `{ [scenario]: { [checkId]: status } }`. The comparisons: our v2-SDK
 * fixture (test/conformance/fixture-server.ts) at 2025-11-25 and at 2026-07-28, and
 * server-everything (a 2025 upstream) at 2025-11-25. Beside them, under `admin`, the
 * admin MCP endpoint's results for each revision (it has no `direct` to compare with:
 * the test checks the scenarios that do not need the fixture's tools).
 *
 * Meant to run inside a network namespace of its own (`unshare -n`, loopback up): the
 * runner's helpers listen on all interfaces. The runner cannot send headers, so a
 * loopback forwarder adds the gateway token.
 *
 *   CONFORMANCE_JS=/path/to/conformance/dist/index.js tsx test/conformance/compare.ts
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { invoke, newWorkspace, startTestApp, type TestApp } from '../helpers/harness.js';
import { listenLoopback, registerServer } from '../helpers/gateway.js';
import { startEverything } from '../helpers/upstreams.js';
import { startConformanceFixture } from './fixture-server.js';

const run = promisify(execFile);
const conformanceJs = process.env.CONFORMANCE_JS;
if (!conformanceJs) throw new Error('CONFORMANCE_JS must name the conformance runner (dist/index.js)');

/** A scenario's checks, by id: SUCCESS, FAILURE, WARNING, INFO or SKIPPED. */
type Outcome = Record<string, string>;
type Results = Record<string, Outcome>;

// A check id can repeat within a scenario (one per probe); the most severe status stands for it.
const SEVERITY = ['SKIPPED', 'INFO', 'SUCCESS', 'WARNING', 'FAILURE'];

/** Every scenario `revision` requires (and the ones it runs unscored) against `url`, in one runner process. */
async function requirements(url: string, revision: string): Promise<Results> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conformance-'));
  try {
    // The runner exits non-zero when a scenario fails: that is a result, not an error.
    await run(process.execPath, [conformanceJs!, 'server', '--url', url, '--requirements', revision, '--timeout', '15000', '-o', dir], {
      timeout: 150_000,
      maxBuffer: 64 * 1024 * 1024,
    }).catch(() => undefined);
    const results: Results = {};
    // One directory per scenario: server-<scenario>-<timestamp>/checks.json.
    for (const entry of fs.readdirSync(dir)) {
      const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
      const checks = JSON.parse(fs.readFileSync(path.join(dir, entry, 'checks.json'), 'utf8')) as { id: string; status: string }[];
      const outcome: Outcome = {};
      for (const { id, status } of checks) {
        const before = outcome[id];
        if (before === undefined || SEVERITY.indexOf(status) > SEVERITY.indexOf(before)) outcome[id] = status;
      }
      results[scenario] = outcome;
    }
    return results;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A loopback forwarder that adds the gateway token to every request and changes
 * nothing else (Host and Origin pass through: the DNS-rebinding scenario sends
 * foreign ones and expects them refused). It listens before the app starts, so that
 * its origin can be listed in the app's ALLOWED_ORIGINS; `target` is set once the
 * gateway exists.
 */
async function forwarder(): Promise<{ url: string; origin: string; target(url: string, token: string): void; close(): void }> {
  let to: URL | undefined;
  let bearer = '';
  const server = http.createServer((req, res) => {
    if (!to) return void res.writeHead(503).end();
    const upstream = http.request(
      { host: to.hostname, port: to.port, path: to.pathname, method: req.method, headers: { ...req.headers, authorization: `Bearer ${bearer}` } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/mcp`,
    origin,
    target: (url, token) => {
      to = new URL(url);
      bearer = token;
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The admin MCP endpoint of a workspace of its own, reached through `via` with that workspace's admin token. */
async function adminFor(t: TestApp, base: string, via: Awaited<ReturnType<typeof forwarder>>): Promise<void> {
  const ws = await newWorkspace(t);
  via.target(`${base}/api/v1/svc-admin/mcp`, ws.token);
}

/** A gateway of its own in front of one upstream, reached through `via`. */
async function gatewayFor(t: TestApp, base: string, name: string, upstreamUrl: string, via: Awaited<ReturnType<typeof forwarder>>): Promise<void> {
  const ws = await newWorkspace(t);
  const { serverGuid } = await registerServer(t, ws, { name, url: upstreamUrl, authType: 'none' });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: `conformance-${name}` });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  // One server, upstream names unchanged (contract 8.2): the runner calls the fixture's tools by their own names.
  await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: gw.body.guid, mode: 'when-needed' });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  via.target(`${base}/gateways/${gw.body.guid}/mcp`, issued.body.token);
}

const viaFixture = await forwarder();
const viaEverything = await forwarder();
const viaAdmin = await forwarder();
// The gateway refuses browser origins it was not told of (contract: PUBLIC_BASE_URL's and ALLOWED_ORIGINS);
// a deployment lists the origins its hosts run at, as this one lists the forwarders'.
const t = await startTestApp({ ALLOWED_ORIGINS: `${viaFixture.origin},${viaEverything.origin},${viaAdmin.origin}` });
const fixture = await startConformanceFixture();
const everything = await startEverything('streamableHttp');
try {
  const base = await listenLoopback(t);
  await gatewayFor(t, base, 'fixture', fixture.url, viaFixture);
  await gatewayFor(t, base, 'everything', everything.url, viaEverything);
  await adminFor(t, base, viaAdmin);
  const comparisons: Record<string, { revision: string; upstream: string; direct: Results; gateway: Results }> = {};
  // Sequential: the fixture's list-change triggers reach every open listen stream, so parallel runs would hear each other.
  for (const [name, revision, upstream, direct, gateway] of [
    ['fixture 2025-11-25', '2025-11-25', 'fixture', fixture.url, viaFixture.url],
    ['fixture 2026-07-28', '2026-07-28', 'fixture', fixture.url, viaFixture.url],
    ['server-everything 2025-11-25', '2025-11-25', 'server-everything', everything.url, viaEverything.url],
  ] as const)
    comparisons[name] = { revision, upstream, direct: await requirements(direct, revision), gateway: await requirements(gateway, revision) };
  const admin: Record<string, Results> = {};
  for (const revision of ['2025-11-25', '2026-07-28']) admin[revision] = await requirements(viaAdmin.url, revision);
  viaFixture.close();
  viaEverything.close();
  viaAdmin.close();
  process.stdout.write(`${JSON.stringify({ comparisons, admin })}\n`);
} finally {
  // Streams the runner leaves open would hold the app's close: bound it, then exit.
  await Promise.race([Promise.all([fixture.close(), everything.close(), t.close()]), new Promise((r) => setTimeout(r, 5000))]);
  // A close cut short by the bound has not removed the app's data directory yet.
  fs.rmSync(t.config.dataDir, { recursive: true, force: true });
  process.exit(0);
}
