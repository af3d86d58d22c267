/**
 * Runs the MCP conformance runner's server scenarios against server-everything
 * directly and through the gateway, and prints both results as JSON
 * ({direct: {scenario: "passed/failed"}, gateway: {...}}). Meant to run inside a
 * network namespace of its own (`unshare -n`, loopback up): the runner's helpers
 * listen on all interfaces. The runner cannot send headers, so a loopback
 * forwarder adds the gateway token.
 *
 *   CONFORMANCE_JS=/path/to/conformance/dist/index.js tsx test/conformance/compare.ts
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { invoke, newWorkspace, startTestApp } from '../helpers/harness.js';
import { listenLoopback, registerServer } from '../helpers/gateway.js';
import { startEverything } from '../helpers/upstreams.js';

const run = promisify(execFile);
const conformanceJs = process.env.CONFORMANCE_JS;
if (!conformanceJs) throw new Error('CONFORMANCE_JS must name the conformance runner (dist/index.js)');

const parse = (stdout: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const m of stdout.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed/gm)) out[m[1]!] = `${m[2]}/${m[3]}`;
  return out;
};

// eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC
const stripAnsi = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, '');

const runner = (url: string, extra: string[] = [], timeout = 60_000) =>
  run(process.execPath, [conformanceJs!, 'server', '--url', url, ...extra], { timeout, maxBuffer: 64 * 1024 * 1024 }).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );

/**
 * Every scenario's result against `url`, one runner process per scenario: run as a
 * whole suite, the runner keeps a stream open after its last scenario and only ends
 * at its timeout, which cost minutes per run.
 */
async function scenarios(url: string): Promise<Record<string, string>> {
  // Against a closed port every scenario fails at once: that run just names them.
  const names = Object.keys(parse(await runner('http://127.0.0.1:1/mcp')));
  const out: Record<string, string> = {};
  for (const name of names) {
    // A single scenario reports "Passed: P/T, F failed".
    const m = /Passed: (\d+)\/\d+, (\d+) failed/.exec(stripAnsi(await runner(url, ['--scenario', name], 30_000)));
    out[name] = m ? `${m[1]}/${m[2]}` : 'no result';
  }
  return out;
}

/** A loopback forwarder to `target` that adds the gateway token to every request. */
async function forwarder(target: string, token: string): Promise<{ url: string; close(): void }> {
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: to.hostname, port: to.port, path: to.pathname, method: req.method, headers: { ...req.headers, host: to.host, authorization: `Bearer ${token}` } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, close: () => server.close() };
}

const t = await startTestApp();
const everything = await startEverything('streamableHttp');
try {
  const base = await listenLoopback(t);
  const ws = await newWorkspace(t);
  const { serverGuid } = await registerServer(t, ws, { name: 'everything', url: everything.url, authType: 'none' });
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'conformance' });
  await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
  // One server, upstream names unchanged (contract 8.2): the runner calls the fixture's tools by their own names.
  await invoke(t, 'rest', ws.token, 'set_gateway_tool_naming', { gatewayGuid: gw.body.guid, mode: 'when-needed' });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  const fwd = await forwarder(`${base}/gateways/${gw.body.guid}/mcp`, issued.body.token);
  const direct = await scenarios(everything.url);
  const gateway = await scenarios(fwd.url);
  fwd.close();
  process.stdout.write(`${JSON.stringify({ direct, gateway })}\n`);
} finally {
  // Streams the runner leaves open would hold the app's close: bound it, then exit.
  await Promise.race([Promise.all([everything.close(), t.close()]), new Promise((r) => setTimeout(r, 5000))]);
  process.exit(0);
}
