/**
 * bench:console — the web console's weight and first render, in Debian's Chromium
 * against the service on embedded stores (PGlite, chDB) with seeded call logs:
 *   - the JavaScript the console loads: every script response Chromium received,
 *     summed raw and gzip-compressed (the service sends them uncompressed; gzip is
 *     what any proxy or CDN in front would send);
 *   - the time from navigation to the Overview showing its chart with data, on a cold
 *     load (a fresh browser context each run: no cache, no session), median of runs.
 * Figures against the goals of issue 15 (< 300 KB gzipped, < 1 s), never assertions.
 *
 *   npm run bench:console -- [--rows 100000] [--runs 7]
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { CHROMIUM, chromiumInstalled, launchChromium } from '../test/helpers/chromium.js';
import { seedCallLogs } from '../src/core/logs/seed.js';
import { createWorkspace } from '../src/core/workspaces.js';
import { buildApp } from '../src/http/app.js';
import { openRuntime } from '../src/runtime/open.js';
import { benchConfig, silentLogger } from './bench-config.js';
import { median } from './stats.js';

const GOAL_KB = 300;
const GOAL_MS = 1000;
const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, runs: { type: 'string', default: '7' } } });
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const out = (line: string) => process.stdout.write(line + '\n');
// The machine is shared: the load beside each figure says how much it can be trusted.
const load = () =>
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} on ${os.availableParallelism()} cores`;

if (!chromiumInstalled()) {
  out(`bench:console needs Chromium at ${CHROMIUM} (apt-get install -y chromium)`);
  process.exit(1);
}

const { config, dataDir } = benchConfig('console', { ADMIN_RATE_LIMIT_PER_MINUTE: '100000000' });
const runtime = await openRuntime(config, { logger: silentLogger });
const app = await buildApp({ services: runtime.services, logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const ws = await createWorkspace(runtime.services.db, { name: 'bench', adminEmail: 'bench@example.test' });
// The day the Overview shows by default (its "Last 24 hours").
const seed = await seedCallLogs(runtime.services, { organizationGuid: ws.organizationGuid, rows: ROWS, days: 1 });
out(`seeded ${seed.rows} call-log rows over the last 24 hours in ${seed.seconds} s`);

/**
 * Runs in the page before its own scripts: the token the sign-in would store, and the
 * moment (ms since navigation start) the Overview's chart is in the document and painted.
 */
const probe = (token: string) => `
  sessionStorage.setItem('svc-admin-token', ${JSON.stringify(token)});
  new MutationObserver((_, observer) => {
    if (!document.querySelector('main .chart canvas')) return;
    observer.disconnect();
    requestAnimationFrame(() => { window.__overviewMs = performance.now(); });
  }).observe(document, { childList: true, subtree: true });
`;

const browser = await launchChromium();
const times: number[] = [];
let scripts: { url: string; raw: number; gzipped: number }[] = [];
for (let run = 0; run < RUNS; run++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(probe(ws.token));
  const page = await context.newPage();
  const seen: Promise<{ url: string; raw: number; gzipped: number }>[] = [];
  page.on('response', (response) => {
    if (response.request().resourceType() !== 'script') return;
    seen.push(response.body().then((body) => ({ url: new URL(response.url()).pathname, raw: body.length, gzipped: gzipSync(body).length })));
  });
  await page.goto(`${base}/console/#/overview`);
  await page.waitForFunction('window.__overviewMs !== undefined', undefined, { timeout: 60_000 });
  const calls = await page.getByRole('list', { name: 'Totals' }).locator('li').first().locator('strong').textContent();
  if (!Number(calls)) throw new Error(`the Overview showed ${calls} calls: the seed did not reach it`);
  times.push(Math.round((await page.evaluate('window.__overviewMs')) as number));
  if (run === 0) scripts = await Promise.all(seen);
  await context.close();
}
await browser.close();

const kb = (bytes: number) => (bytes / 1024).toFixed(1);
const raw = scripts.reduce((sum, s) => sum + s.raw, 0);
const gzipped = scripts.reduce((sum, s) => sum + s.gzipped, 0);
out(`scripts loaded (${scripts.length}):`);
for (const s of [...scripts].sort((a, b) => b.gzipped - a.gzipped))
  out(`  ${s.url.padEnd(40)} ${kb(s.raw).padStart(7)} KB raw ${kb(s.gzipped).padStart(6)} KB gzipped`);
out(`console JavaScript: ${kb(raw)} KB raw, ${kb(gzipped)} KB gzipped (goal < ${GOAL_KB} KB gzipped: ${gzipped / 1024 < GOAL_KB ? 'met' : 'MISSED'})`);
const mid = median(times);
out(
  `Overview with its chart and data, cold load: median ${mid} ms over ${RUNS} runs (${times.join(', ')} ms; first run after start included; ${load()}) (goal < ${GOAL_MS} ms: ${mid < GOAL_MS ? 'met' : 'MISSED'})`,
);

await app.close();
await runtime.close();
fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
