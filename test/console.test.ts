import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromiumInstalled, launchChromium } from './helpers/chromium.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { newGuid } from '../src/core/ids.js';
import { invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { gatewayClient, registerServer } from './helpers/gateway.js';
import { newMember } from './helpers/members.js';
import { freePort } from './helpers/ports.js';
import { startEverything, startHeaderServer, startOAuthServer, type HeaderUpstream, type OAuthUpstream, type Upstream } from './helpers/upstreams.js';

/**
 * The web console (contract 8.5) in a real headless Chromium against the real
 * service: sign in, every page with real data (seeded calls and an alert), the logs'
 * filters, custom time window and a call's detail, an alert's record and its call,
 * servers of each authType (the OAuth one approved in a second tab and back),
 * people's roles and teams, a gateway's curation, token and a connection made by a
 * real host, settings, keyboard navigation, a narrow window, a capability-less view,
 * signing out. Screenshots of each page go to test-results/console/.
 */
const SHOTS = path.resolve('test-results/console');
const PAGES = ['Overview', 'Logs', 'Alerts', 'Servers', 'Gateways', 'Hosts', 'People', 'Audit', 'Settings'];
// One store kind is enough for a browser: the console sees only REST.
const run = chromiumInstalled() && storeKind() === 'pglite';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let headerUpstream: HeaderUpstream;
let oauthUpstream: OAuthUpstream;
let browser: Browser;
let page: Page;
let serverGuid: string;
let gatewayGuid: string;
let seededAt: number;
const SEEDED = 240;
const seeded: { traceId: string; toolName: string }[] = [];

/** A tab in UTC (or `timezoneId`); a missing element fails its step after 20 s instead of waiting forever (playwright's library default). */
async function newPage(width: number, timezoneId = 'UTC'): Promise<Page> {
  const p = await browser.newPage({ viewport: { width, height: 800 }, timezoneId });
  p.setDefaultTimeout(20_000);
  return p;
}

async function signIn(p: Page, token: string) {
  await p.goto(`${base}/console`);
  await p.getByLabel('Access token').fill(token);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Main' }).waitFor();
}

const shot = (name: string, p: Page = page) => p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
const goTo = async (name: string, p: Page = page) => {
  await p.getByRole('link', { name, exact: true }).click();
  await p.getByRole('heading', { name, level: 1 }).waitFor();
};
/** A datetime-local value for epoch ms: the pages run in UTC. */
const minuteInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const bodyRows = (p: Page = page) => p.locator('main table tbody tr');
const focusedText = (p: Page = page) => p.evaluate('document.activeElement && document.activeElement.textContent.trim()');
const isFocused = (l: Locator) => l.evaluate((e) => e === e.ownerDocument.activeElement);
/** An editor opened by `opener` closes on `close` (Escape, Cancel) and gives the focus back to it. */
async function closesBack(opener: Locator, editor: Locator, close: () => Promise<void>) {
  await opener.click();
  await expect.poll(() => editor.evaluate((f) => f.contains(f.ownerDocument.activeElement))).toBe(true);
  await close();
  await expect.poll(() => editor.count()).toBe(0);
  await expect.poll(() => isFocused(opener)).toBe(true);
}

describe.runIf(run)('the web console', () => {
  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    [t, everything, headerUpstream, oauthUpstream] = await Promise.all([
      startTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }),
      startEverything('streamableHttp'),
      startHeaderServer('X-Api-Key', 'console-header-secret'),
      startOAuthServer(),
    ]);
    await t.app.listen({ port, host: '127.0.0.1' });
    base = `http://127.0.0.1:${port}`;
    ws = await newWorkspace(t);
    serverGuid = (await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' })).serverGuid;
    gatewayGuid = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Main gateway' })).body.guid;
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: serverGuid });
    // Calls of the last hours, one a minute, through the normal ingest path, naming the real gateway, server and user.
    seededAt = Date.now();
    const rows = Array.from({ length: SEEDED }, (_, i) => {
      const toolName = ['echo', 'get-sum', 'trigger-long-running-operation', 'get-env'][i % 4]!;
      const traceId = newGuid().replaceAll('-', '');
      if (i < 4) seeded.push({ traceId, toolName });
      return logRow(ws.organizationGuid, {
        createdAt: seededAt - i * 60_000,
        toolName,
        durationMs: 5 + ((i * 37) % 400),
        status: i % 9 === 0 ? 'error' : 'ok',
        errorMessage: i % 9 === 0 ? 'upstream said no' : null,
        outboundGatewayGuid: gatewayGuid,
        inboundServerGuid: serverGuid,
        userGuid: ws.userGuid,
        traceId,
        protocolVersion: i % 2 ? '2025-11-25' : '2026-07-28',
        requestBody: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: toolName, arguments: { n: i } } }),
        responseBody: JSON.stringify({ jsonrpc: '2.0', id: i, result: { content: [{ type: 'text', text: `answer ${i}` }] } }),
        requestHeaders: { 'content-type': 'application/json', authorization: 'Bearer svcg_hidden_value' },
      });
    });
    await ingest(t, rows);
    // An alert shaped as the gateway raises it (upstream-health.ts): it names the server and gateway and the call's trace.
    await t.runtime.services.alerts.raise({
      organizationGuid: ws.organizationGuid,
      code: 'upstream_call_failed',
      messageType: 'error',
      subject: 'Calls to server Everything keep failing',
      message: `5 of the last 8 calls to ${everything.url} through gateway Main gateway failed within 60 s; last error: upstream said no`,
      debugContext: { responseStatus: 502, method: 'tools/call', reason: 'upstream said no', traceId: seeded[2]!.traceId, failures: 5, calls: 8 },
      relatedResourceIds: [serverGuid, gatewayGuid],
      relatedContext: { inboundServerGuid: serverGuid, gatewayGuid },
    });
    browser = await launchChromium();
    page = await newPage(1280);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await Promise.all([everything?.close(), headerUpstream?.close(), oauthUpstream?.close()]);
  });

  it("is what the service's own address opens in a browser, by a relative redirect that holds behind a path prefix", async () => {
    for (const url of [`${base}/`, `${base}/console`]) {
      const answer = await fetch(url, { redirect: 'manual' });
      expect(answer.status).toBe(302);
      expect(new URL(answer.headers.get('location')!, url).href).toBe(`${base}/console/`);
    }
  });

  it('loads every module it preloads and preloads every module it loads, without a script error', async () => {
    const fresh = await newPage(1280);
    const loaded = new Map<string, number>();
    const errors: string[] = [];
    fresh.on('response', (r) => void (r.request().resourceType() === 'script' && loaded.set(new URL(r.url()).pathname, r.status())));
    fresh.on('pageerror', (err) => errors.push(err.message));
    // Its content security policy blocks nothing of its own (a violation is logged as a console error), nor does any request fail.
    fresh.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    await signIn(fresh, ws.token);
    await fresh.getByRole('list', { name: 'Totals' }).waitFor();
    await fresh.locator('.chart canvas').first().waitFor();
    const page = await fetch(`${base}/console/`);
    // The page runs only its own scripts, talks only to the service, and is never framed by another site.
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self' 'sha256-[^']+'; .*connect-src 'self'; .*frame-ancestors 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const index = await page.text();
    const preloaded = [...index.matchAll(/rel="modulepreload" href="\.\/([^"]+)"/g)].map((m) => `/console/${m[1]}`);
    expect([...loaded.keys()].sort()).toEqual([...preloaded, '/console/app.js'].sort());
    expect([...loaded.values()].every((status) => status === 200)).toBe(true);
    expect(errors).toEqual([]);
    await fresh.close();
  });

  it('signs in with an access token kept in sessionStorage only', async () => {
    await page.goto(`${base}/console`);
    await page.getByLabel('Access token').fill('svcp_wrong_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/token/i);
    await signIn(page, ws.token);
    for (const name of PAGES) {
      await expect(page.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
    }
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['svc-admin-token']);
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
  });

  it('Overview shows totals, a chart and the top tools, servers and users, laid out whole at 1280x800', async () => {
    await goTo('Overview');
    await page.getByRole('list', { name: 'Totals' }).getByText(String(SEEDED)).waitFor();
    await page.locator('.chart canvas').first().waitFor();
    const topTools = page.getByRole('table', { name: 'Top tools' });
    await topTools.getByRole('cell', { name: 'echo', exact: true }).waitFor();
    expect(await topTools.getByRole('row').count()).toBe(5);
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user.emailAddress;
    await page.getByRole('table', { name: 'Top users' }).getByRole('link', { name: me }).waitFor();
    // Nothing is cut off: no top table scrolls inside its box, the page does not scroll sideways,
    // and the navigation is one line.
    for (const name of ['Top tools', 'Top servers', 'Top users']) {
      const clipped = await page.getByRole('table', { name }).evaluate((table: any) => table.parentElement.scrollWidth > table.parentElement.clientWidth);
      expect(clipped, name).toBe(false);
    }
    expect(await page.evaluate('document.scrollingElement.scrollWidth <= innerWidth')).toBe(true);
    const tops = await Promise.all(PAGES.map(async (name) => (await page.getByRole('link', { name, exact: true }).boundingBox())!.y));
    expect(new Set(tops).size).toBe(1);
    await shot('overview');
  });

  it('Logs lists calls with Time, Tool, Status and Duration, filters through the URL and opens a call with its bodies and trace', async () => {
    await goTo('Logs');
    const table = page.getByRole('table');
    for (const header of ['Time', 'Tool', 'Status', 'Duration']) await table.getByRole('columnheader', { name: header, exact: true }).waitFor();
    await expect.poll(() => bodyRows().count()).toBe(50);
    // A server is picked by name (its id is what the filter sends).
    const server = page.getByRole('combobox', { name: 'Server' });
    await expect.poll(() => server.locator('option', { hasText: 'Everything' }).count()).toBe(1);
    await server.selectOption({ label: 'Everything' });
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.url()).toContain(`inbound_server_guid=${serverGuid}`);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => page.url()).not.toContain('inbound_server_guid');
    // The boxes follow the view once it has changed: wait for that before typing into them.
    await expect.poll(() => server.inputValue()).toBe('');
    await page.getByLabel('Trace id').fill(seeded[1]!.traceId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(1);
    await expect.poll(() => bodyRows().first().textContent()).toContain(seeded[1]!.toolName);
    expect(page.url()).toContain(`trace_id=${seeded[1]!.traceId}`);
    await shot('logs');
    const opener = table.getByRole('button', { name: /Details of the call/ });
    // Named apart from the calls of the same second: the tool, the outcome and the row.
    expect(await opener.getAttribute('aria-label')).toMatch(new RegExp(`^Details of the call at .+: ${seeded[1]!.toolName}, (ok|error) \\([0-9a-f]{8}…\\)$`));
    await opener.click();
    const detail = page.getByRole('complementary', { name: 'Call detail' });
    // The detail takes the focus (it is drawn below the rows), and gives it back on Escape.
    await expect.poll(() => detail.getByRole('heading', { level: 2 }).evaluate((h) => h === h.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => detail.count()).toBe(0);
    await expect.poll(() => opener.evaluate((b) => b === b.ownerDocument.activeElement)).toBe(true);
    await opener.click();
    await expect.poll(() => detail.getByLabel('Response body').textContent()).toContain('answer 1');
    expect(await detail.getByLabel('Request headers').textContent()).toContain('[REDACTED]');
    expect(await detail.getByLabel('Request headers').textContent()).not.toContain('svcg_hidden_value');
    // The host's protocol revision (seeded[1] is an odd row: a 2025 host).
    expect(await detail.getByRole('definition').allTextContents()).toContain('2025-11-25');
    await shot('logs-detail');
    // The view is a link: a new tab opened on it shows the same filtered calls.
    const shared = await newPage(1280);
    await shared.goto(`${base}/console`);
    await shared.evaluate((token) => sessionStorage.setItem('svc-admin-token', token), ws.token);
    await shared.goto(page.url());
    await shared.reload();
    await expect.poll(() => bodyRows(shared).count()).toBe(1);
    await shared.close();
  });

  it('Logs takes a custom From/To window, keeps it in the URL as fromMs/toMs and refuses one that ends before it starts', async () => {
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => bodyRows().count()).toBe(50);
    const minute = (ms: number) => Math.floor(ms / 60_000) * 60_000;
    const fromMs = minute(seededAt - 30.5 * 60_000);
    const toMs = minute(seededAt - 10.5 * 60_000) + 59_999;
    const expected = Array.from({ length: SEEDED }, (_, i) => seededAt - i * 60_000).filter((at) => at >= fromMs && at <= toMs).length;
    expect(expected).toBeGreaterThan(15);
    await page.getByLabel('From', { exact: true }).fill(minuteInput(fromMs));
    await page.getByLabel('To', { exact: true }).fill(minuteInput(toMs));
    await page.getByRole('button', { name: 'Apply time range' }).click();
    await expect.poll(() => bodyRows().count()).toBe(expected);
    expect(new URL(page.url()).hash).toContain(`fromMs=${fromMs}&toMs=${toMs}`);
    expect(await page.getByLabel('Time range').inputValue()).toBe('custom');
    // The window survives a reload, boxes included.
    await page.reload();
    await expect.poll(() => bodyRows().count()).toBe(expected);
    expect(await page.getByLabel('From', { exact: true }).inputValue()).toBe(minuteInput(fromMs));
    await page.getByLabel('From', { exact: true }).fill(minuteInput(toMs + 3_600_000));
    await page.getByRole('button', { name: 'Apply time range' }).click();
    await expect.poll(() => page.getByRole('form', { name: 'Time window' }).getByRole('alert').textContent()).toContain('before the To time');
    expect(new URL(page.url()).hash).toContain(`fromMs=${fromMs}&`);
    // A preset again drops the custom bounds.
    await page.getByLabel('Time range').selectOption('24h');
    await expect.poll(() => bodyRows().count()).toBe(50);
    expect(page.url()).not.toContain('fromMs');
  });

  it("shows times in the browser's time zone, as the From/To boxes take them, and says which zone that is", async () => {
    const kolkata = await newPage(1280, 'Asia/Kolkata');
    await signIn(kolkata, ws.token);
    await kolkata.evaluate(`location.hash = '#/logs?trace_id=${seeded[1]!.traceId}&range=24h'`);
    await expect.poll(() => bodyRows(kolkata).count()).toBe(1);
    // seeded[1] was made a minute before seededAt; Kolkata is UTC+05:30 all year.
    const local = new Date(seededAt - 60_000 + 330 * 60_000).toISOString().replace('T', ' ').slice(0, 19);
    expect((await bodyRows(kolkata).first().getByRole('cell').first().textContent())!.trim()).toBe(local);
    // ICU names the zone by its older id, Asia/Calcutta.
    await kolkata.getByText(/^Times are in your time zone \(Asia\/(Kolkata|Calcutta)\)\.$/).waitFor();
    await kolkata.close();
  });

  it('Alerts lists the seeded alert, opens its full record and follows its link to the call', async () => {
    await goTo('Alerts');
    const list = page.getByRole('table', { name: 'Alerts, newest first' });
    await list.getByRole('button', { name: 'Calls to server Everything keep failing' }).click();
    const record = page.getByRole('complementary', { name: 'Alert record' });
    await expect.poll(() => record.getByLabel('Debug context').textContent()).toContain(seeded[2]!.traceId);
    expect(await record.getByRole('definition').filter({ hasText: 'upstream_call_failed' }).count()).toBe(1);
    await record.getByRole('link', { name: 'Server Everything: calls' }).waitFor();
    await record.getByRole('link', { name: 'Gateway Main gateway: calls' }).waitFor();
    await shot('alerts');
    // The record takes the focus on its heading; Escape gives it back to the row that opened it, and opens it again.
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.tagName')).toBe('H2');
    await page.keyboard.press('Escape');
    await expect.poll(() => record.count()).toBe(0);
    await expect
      .poll(() => page.evaluate('document.activeElement && document.activeElement.textContent.trim()'))
      .toBe('Calls to server Everything keep failing');
    await page.keyboard.press('Enter');
    await record.getByRole('link', { name: 'The call behind this alert' }).click();
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    await expect.poll(() => bodyRows().count()).toBe(1);
    expect(await bodyRows().first().textContent()).toContain(seeded[2]!.toolName);
    expect(await page.getByLabel('Trace id').inputValue()).toBe(seeded[2]!.traceId);
  });

  it('Servers registers one server of each authType; the OAuth one is approved in another tab, and the list polls only while one is validating', async () => {
    await goTo('Servers');
    const servers = page.getByRole('table', { name: 'Inbound servers' });
    await servers.getByRole('button', { name: 'Everything', exact: true }).waitFor();
    const statusOf = (name: string) =>
      servers
        .getByRole('row')
        .filter({ has: page.getByRole('button', { name, exact: true }) })
        .getByRole('cell')
        .nth(3);
    const register = async (name: string, url: string, authType: string) => {
      await page.getByLabel('Server name').fill(name);
      await page.getByLabel('Server URL').fill(url);
      await page.getByLabel('Authentication').selectOption(authType);
    };

    await register('Plain', everything.url, 'none');
    await page.getByRole('button', { name: 'Register server' }).click();
    await expect.poll(() => statusOf('Plain').textContent()).toBe('open');

    await register('Keyed', headerUpstream.url, 'headers');
    await page.getByLabel('Headers', { exact: true }).fill('X-Api-Key: console-header-secret');
    await page.getByRole('button', { name: 'Register server' }).click();
    // needs-authentication at first; validation's outcome arrives by the page's own polling.
    await expect.poll(() => statusOf('Keyed').textContent(), { timeout: 30_000 }).toBe('authenticated');
    expect(await page.getByLabel('Server name').inputValue()).toBe('');

    await register('Delegated', oauthUpstream.url, 'oauth');
    await page.getByRole('button', { name: 'Register server' }).click();
    const authorize = page.getByRole('link', { name: 'Open the authorization page' });
    expect(await authorize.getAttribute('href')).toMatch(new RegExp(`^${oauthUpstream.issuer}/authorize\\?`));
    await expect.poll(() => statusOf('Delegated').textContent()).toBe('needs-authentication');
    await shot('servers');
    // The human approves in a second tab (the demo server approves at once) and lands on the callback page, which leads back.
    const [approval] = await Promise.all([page.waitForEvent('popup'), authorize.click()]);
    await approval.getByRole('heading', { name: 'Authorization complete' }).waitFor();
    await approval.getByRole('link', { name: "Back to the console's Servers page" }).click();
    // The new tab has no token of its own (sessionStorage is per tab): sign-in, then the Servers page.
    await approval
      .getByLabel('Access token')
      .or(approval.getByRole('heading', { name: 'Servers', level: 1 }))
      .first()
      .waitFor();
    if (await approval.getByLabel('Access token').isVisible()) {
      await approval.getByLabel('Access token').fill(ws.token);
      await approval.getByRole('button', { name: 'Sign in' }).click();
    }
    await approval.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await approval.close();
    // The first tab learns of the approval without a reload, and the notice asking for it goes.
    await expect.poll(() => statusOf('Delegated').textContent(), { timeout: 30_000 }).toBe('authenticated');
    await expect.poll(() => page.getByRole('link', { name: 'Open the authorization page' }).count()).toBe(0);

    // Nothing is validating any more: the page stops reading the list.
    let reads = 0;
    const count = (request: { url(): string }) => void (new URL(request.url()).pathname.endsWith('/servers') && reads++);
    page.on('request', count);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    page.off('request', count);
    expect(reads).toBe(0);
    await servers.getByRole('button', { name: 'Delegated', exact: true }).click();
    await expect.poll(() => page.getByRole('table', { name: 'Identities of Delegated' }).getByRole('row').count()).toBe(2);
    // Another identity, or one more approval later: the panel gives a new authorization link (add_identity).
    await page.getByRole('button', { name: 'Get an authorization link' }).click();
    const again = page.getByRole('link', { name: 'Open the authorization page' }).last();
    await expect.poll(() => again.getAttribute('href')).toMatch(new RegExp(`^${oauthUpstream.issuer}/authorize\\?`));
  });

  it('refuses header lines without a colon before sending anything, naming the line but never its value', async () => {
    await goTo('Servers');
    const form = page.getByRole('form', { name: 'Register a server' });
    await form.getByLabel('Server name').fill('Colonless');
    await form.getByLabel('Server URL').fill(headerUpstream.url);
    await form.getByLabel('Authentication').selectOption('headers');
    await form.getByLabel('Headers', { exact: true }).fill('X-Api-Key: console-header-secret\nAuthorization Bearer console-colonless-secret');
    await form.getByRole('button', { name: 'Register server' }).click();
    const refused = form.getByRole('alert');
    await expect.poll(() => refused.textContent()).toContain('line 2 has no colon (it starts “Authorization”)');
    expect(await refused.textContent()).not.toContain('console-colonless-secret');
    const servers = (await invoke(t, 'rest', ws.token, 'list_inbound_servers', {})).body.items;
    expect(servers.map((s: { name: string }) => s.name)).not.toContain('Colonless');
    // An action whose input is made as it runs (the collector's) refuses the same way.
    await goTo('Settings');
    const collector = page.getByRole('form', { name: 'Forward call logs and traces' });
    await collector.getByLabel('Collector headers').fill('Authorization Bearer console-colonless-secret');
    await collector.getByRole('button', { name: 'Save collector' }).click();
    await expect.poll(() => collector.getByRole('alert').textContent()).toContain('line 1 has no colon (it starts “Authorization”)');
    expect(await collector.getByRole('alert').textContent()).not.toContain('console-colonless-secret');
  });

  it('Audit and Settings render with real data; Settings creates an access token shown once and revokes it', async () => {
    await goTo('Audit');
    await page.getByRole('table', { name: 'Admin operations, newest first' }).getByRole('cell', { name: 'assign_server_to_gateway' }).first().waitFor();
    await shot('audit');
    await goTo('Settings');
    const tokens = page.getByRole('table', { name: 'Access and gateway tokens' });
    await tokens.getByRole('cell', { name: 'initial-admin', exact: true }).waitFor();
    expect(await page.getByLabel('Logs collector URL').inputValue()).toBe('');
    await page.getByLabel('Token label').fill('console-made');
    await page.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => page.getByLabel('Access token', { exact: true }).textContent()).toMatch(/^svcp_/);
    await tokens.getByRole('cell', { name: 'console-made', exact: true }).waitFor();
    await shot('settings');
    const made = await page.getByLabel('Access token', { exact: true }).textContent();
    expect((await invoke(t, 'rest', made!, 'whoami', {})).status).toBe(200);
    // A destructive action asks first, in place: Cancel leaves the token working.
    await tokens.getByRole('button', { name: 'Revoke console-made' }).click();
    await tokens.getByRole('group', { name: 'Confirm: Revoke console-made' }).getByRole('button', { name: 'Cancel' }).click();
    // Escape takes the question back too.
    await tokens.getByRole('button', { name: 'Revoke console-made' }).click();
    await page.keyboard.press('Escape');
    await tokens.getByRole('button', { name: 'Revoke console-made' }).waitFor();
    expect((await invoke(t, 'rest', made!, 'whoami', {})).status).toBe(200);
    await tokens.getByRole('button', { name: 'Revoke console-made' }).click();
    const confirm = tokens.getByRole('button', { name: 'Yes, Revoke console-made' });
    await expect.poll(() => confirm.evaluate((b) => b === b.ownerDocument.activeElement)).toBe(true);
    await confirm.click();
    await expect.poll(() => tokens.getByRole('cell', { name: 'console-made', exact: true }).count()).toBe(0);
    // The row went with the button: the focus goes to the table's caption, not to the page's top.
    await expect.poll(() => focusedText()).toBe('Access and gateway tokens');
    expect((await invoke(t, 'rest', made!, 'whoami', {})).status).toBe(401);
  });

  it('Audit and Alerts page through their records 50 at a time, the page kept in the URL', async () => {
    const paged = await newWorkspace(t);
    for (let i = 0; i < 55; i++) {
      expect((await invoke(t, 'rest', paged.token, 'create_team', { name: `Paged team ${i}` })).status).toBe(201);
      await t.runtime.services.alerts.raise({
        organizationGuid: paged.organizationGuid,
        code: 'paged_alert',
        messageType: 'info',
        subject: `Paged alert ${i}`,
        message: 'One of many.',
      });
    }
    const audited = (await invoke(t, 'rest', paged.token, 'query_audit_log', { take: 1000 })).body.items.length;
    expect(audited).toBeGreaterThan(50);
    const other = await newPage(1280);
    await signIn(other, paged.token);
    for (const [name, caption, total] of [
      ['Audit', 'Admin operations, newest first', audited],
      ['Alerts', 'Alerts, newest first', 55],
    ] as const) {
      await goTo(name, other);
      const rows = other.getByRole('table', { name: caption }).locator('tbody tr');
      await expect.poll(() => rows.count()).toBe(50);
      await other.getByRole('table', { name: `${caption}: 1–50` }).waitFor();
      expect(await other.getByRole('button', { name: 'Previous page' }).isDisabled()).toBe(true);
      await other.getByRole('button', { name: 'Next page' }).click();
      await expect.poll(() => rows.count()).toBe(total - 50);
      expect(new URL(other.url()).hash).toContain('skip=50');
      expect(await other.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
      // The page is a link: a reload shows it again.
      await other.reload();
      await other.getByRole('table', { name: `${caption}: 51–${total}` }).waitFor();
      await other.getByRole('button', { name: 'Previous page' }).click();
      await expect.poll(() => rows.count()).toBe(50);
      expect(new URL(other.url()).hash).not.toContain('skip=50');
    }
    await other.close();
  });

  it('Alerts narrows the list to when they were raised, the range kept in the URL', async () => {
    const ranged = await newWorkspace(t);
    await t.runtime.services.alerts.raise({
      organizationGuid: ranged.organizationGuid,
      code: 'recent_alert',
      messageType: 'info',
      subject: 'Raised just now',
      message: 'New.',
    });
    // One raised ten days ago: a row of the alerts table with an older time, as the store keeps them.
    await t.runtime.services.clickhouse.client.command({
      query: `INSERT INTO alerts (organization_guid, guid, created_at, code, message_type, subject, message)
              VALUES ('${ranged.organizationGuid}', '${newGuid()}', now64(3) - INTERVAL 10 DAY, 'old_alert', 'warning', 'Raised ten days ago', 'Old.')`,
    });
    const other = await newPage(1280);
    await signIn(other, ranged.token);
    await goTo('Alerts', other);
    const subjects = () =>
      other
        .getByRole('table', { name: /^Alerts, newest first/ })
        .locator('tbody tr td:nth-child(4)')
        .allTextContents();
    // Every alert by default, newest first.
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised just now', 'Raised ten days ago']);
    await other.getByLabel('Time range').selectOption('7d');
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised just now']);
    expect(new URL(other.url()).hash).toContain('range=7d');
    // Filters applied keep the range; a reload shows the same.
    await other.getByLabel('Severity').selectOption('warning');
    await other.getByRole('button', { name: 'Apply filters' }).click();
    await other.getByText('No alerts in this range.').waitFor();
    expect(new URL(other.url()).hash).toContain('range=7d');
    await other.getByLabel('Time range').selectOption('30d');
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised ten days ago']);
    await other.reload();
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised ten days ago']);
    // Any time lists what was raised until the page opened; Refresh brings a newer one.
    await other.getByLabel('Severity').selectOption('');
    await other.getByLabel('Time range').selectOption('all');
    await other.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised just now', 'Raised ten days ago']);
    await t.runtime.services.alerts.raise({
      organizationGuid: ranged.organizationGuid,
      code: 'newer_alert',
      messageType: 'info',
      subject: 'Raised after the page opened',
      message: 'Newer.',
    });
    await other.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(async () => (await subjects()).map((s) => s.trim())).toEqual(['Raised after the page opened', 'Raised just now', 'Raised ten days ago']);
    await other.close();
  });

  it('People creates a team, and a role from capability checkboxes (list_capabilities)', async () => {
    await goTo('People');
    await page.getByLabel('Team name').fill('Platform');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('table', { name: 'Teams' }).getByRole('cell', { name: 'Platform', exact: true }).waitFor();
    const form = page.getByRole('form', { name: 'Create a role' });
    await form.getByLabel('Role name').fill('Auditors');
    await form.getByRole('checkbox', { name: 'View the audit log' }).check();
    await form.getByRole('checkbox', { name: 'Query and export logs' }).check();
    await form.getByRole('button', { name: 'Create role' }).click();
    const row = page.getByRole('table', { name: 'Roles' }).getByRole('row').filter({ hasText: 'Auditors' });
    await expect.poll(() => row.getByRole('cell').nth(1).textContent()).toBe('2');
    await shot('people');
    const capabilities = (await invoke(t, 'rest', ws.token, 'list_capabilities', {})).body.groups.flatMap((g: any) => g.capabilities);
    const keyOf = (label: string) => capabilities.find((c: any) => c.label === label).key;
    const roles = await invoke(t, 'rest', ws.token, 'list_roles', {});
    const created = roles.body.items.find((r: any) => r.name === 'Auditors');
    expect([...created.grantedCapabilities].sort()).toEqual([keyOf('View the audit log'), keyOf('Query and export logs')].sort());
    // Editing unchecks one: the role keeps the other (Escape first closes the editor unchanged).
    const edit = page.getByRole('form', { name: 'Edit role Auditors' });
    await closesBack(page.getByRole('button', { name: 'Edit Auditors' }), edit, () => page.keyboard.press('Escape'));
    await page.getByRole('button', { name: 'Edit Auditors' }).click();
    await edit.getByRole('checkbox', { name: 'Query and export logs' }).uncheck();
    await edit.getByRole('button', { name: 'Save role' }).click();
    await expect.poll(() => row.getByRole('cell').nth(1).textContent()).toBe('1');
    const edited = (await invoke(t, 'rest', ws.token, 'list_roles', {})).body.items.find((r: any) => r.name === 'Auditors');
    expect(edited.grantedCapabilities).toEqual([keyOf('View the audit log')]);
  });

  it("Gateways: create, assign, curate the assignment's tools, issue a token; a host's connection opens with its detail and calls", async () => {
    await goTo('Gateways');
    await page.getByLabel('Gateway name').fill('Console gateway');
    await page.getByRole('button', { name: 'Create gateway' }).click();
    await page.getByRole('heading', { name: 'Console gateway' }).waitFor();
    await page.getByLabel('Tool naming mode').waitFor();
    await page.getByLabel('Server to assign').selectOption({ label: 'Everything' });
    await page.getByRole('button', { name: 'Assign server' }).click();
    const assignments = page.getByRole('table', { name: 'Servers of Console gateway' });
    await assignments.getByRole('cell', { name: 'Everything', exact: true }).waitFor();

    // The editor names its server, takes the focus, and closes on Escape or Cancel, giving the focus back.
    const editTools = assignments.getByRole('button', { name: 'Edit tools of Everything' });
    const curation = page.getByRole('form', { name: 'Tool filter and overrides of Everything' });
    await closesBack(editTools, curation, () => page.keyboard.press('Escape'));
    await closesBack(editTools, curation, () => curation.getByRole('button', { name: 'Cancel' }).click());
    await editTools.click();
    await page.getByLabel('Tool filter', { exact: true }).selectOption('allow');
    await page.getByLabel('Filtered tools').fill('echo, get-sum');
    await page.getByLabel('Tool overrides').fill(JSON.stringify({ echo: { name: 'say', description: 'Says it back' } }));
    await page.getByRole('button', { name: 'Save tool curation' }).click();
    const summary = assignments.getByRole('row').filter({ hasText: 'Everything' });
    await expect.poll(() => summary.textContent()).toContain('allow: echo, get-sum');
    expect(await summary.textContent()).toContain('echo → say (new description)');

    await page.getByRole('button', { name: 'Issue gateway token' }).click();
    const shown = page.getByLabel('Gateway token', { exact: true });
    await expect.poll(() => shown.textContent()).toMatch(/^svcg_/);
    await page.getByRole('button', { name: 'Copy gateway token' }).waitFor();
    const connectUrl = (await page.locator('.once + p code').textContent())!;
    await shot('gateways');

    // A host connects with the token and calls the curated tool: the gateway shows it under its new name.
    const host = await gatewayClient(connectUrl, (await shown.textContent())!);
    try {
      const tools = (await host.listTools()).tools.map((x) => x.name).sort();
      expect(tools).toEqual([expect.stringMatching(/get-sum$/), expect.stringMatching(/say$/)]);
      const answer = await host.callTool({ name: tools[1]!, arguments: { message: 'from the console test' } });
      expect(JSON.stringify(answer.content)).toContain('from the console test');
    } finally {
      await host.close();
    }
    await t.runtime.services.callLogs.flush();

    const connections = page.getByRole('table', { name: 'Connections of Console gateway' });
    await connections.getByRole('row').nth(1).getByRole('button').first().click();
    const detail = page.getByRole('complementary', { name: 'Connection detail' });
    await detail.getByRole('definition').filter({ hasText: 'Console gateway' }).waitFor();
    await expect.poll(() => detail.getByRole('definition').nth(4).textContent()).not.toBe('—');
    await shot('gateways-connection');
    await detail.getByRole('link', { name: 'Calls of this connection' }).click();
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    await expect.poll(() => bodyRows().filter({ hasText: 'echo' }).count()).toBeGreaterThan(0);
  });

  it('Gateways issues a token for a gateway whose server asks each user for their own identity, picked by name', async () => {
    const { serverGuid, identityGuid } = await registerServer(t, ws, {
      name: 'Keyed per user',
      url: headerUpstream.url,
      authType: 'headers',
      headers: { 'X-Api-Key': 'console-header-secret' },
    });
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Per-user gateway' })).body;
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.guid, inboundServerGuid: serverGuid, identityScheme: 'userIdentity' });
    await goTo('Gateways');
    await page.getByRole('link', { name: 'Per-user gateway' }).click();
    const choice = page.getByLabel('Your identity for Keyed per user');
    await expect.poll(() => choice.locator('option').count()).toBe(2);
    await choice.selectOption(identityGuid!);
    await page.getByRole('button', { name: 'Issue gateway token' }).click();
    await expect.poll(() => page.getByLabel('Gateway token', { exact: true }).textContent()).toMatch(/^svcg_/);
    const connections = await invoke(t, 'rest', ws.token, 'list_connections', { gatewayGuid: gw.guid });
    expect(connections.body.items).toHaveLength(1);
    // A second connection of the same user has the same name: their controls still read apart.
    await choice.selectOption(identityGuid!);
    await page.getByRole('button', { name: 'Issue gateway token' }).click();
    const disable = page.getByRole('table', { name: 'Connections of Per-user gateway' }).getByRole('button', { name: /^Disable / });
    await expect.poll(() => disable.count()).toBe(2);
    const names = await disable.allTextContents();
    expect(new Set(names).size).toBe(2);
    await page.getByRole('button', { name: 'Close gateway' }).click();
  });

  it('Gateways assigns a server with one shared identity picked by name, and asks before disabling the gateway', async () => {
    const { serverGuid, identityGuid } = await registerServer(t, ws, {
      name: 'Keyed for all',
      url: headerUpstream.url,
      authType: 'headers',
      headers: { 'X-Api-Key': 'console-header-secret' },
    });
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Shared gateway' })).body;
    // From another page: the list is read again on the way in.
    await goTo('Servers');
    await goTo('Gateways');
    await page.getByRole('link', { name: 'Shared gateway' }).click();
    await page.getByLabel('Server to assign').selectOption({ label: 'Keyed for all' });
    await page.getByLabel('Identity scheme').selectOption('sharedIdentity');
    const shared = page.getByLabel('Shared identity');
    await expect.poll(() => shared.locator('option').count()).toBe(2);
    await shared.selectOption(identityGuid!);
    await page.getByRole('button', { name: 'Assign server' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid: gw.guid })).body.items)
      .toEqual([expect.objectContaining({ serverGuids: [serverGuid], identityScheme: 'sharedIdentity', sharedIdentityGuid: identityGuid, configured: true })]);

    // Disabling cuts every connection off: it is asked first, and Cancel gives the focus back to the button.
    await page.getByRole('button', { name: 'Disable gateway' }).click();
    await page.getByRole('group', { name: 'Confirm: Disable gateway' }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.textContent')).toBe('Disable gateway');
    expect((await invoke(t, 'rest', ws.token, 'get_gateway', { gatewayGuid: gw.guid })).body.enabled).toBe(true);
    await page.getByRole('button', { name: 'Disable gateway' }).click();
    await page.getByRole('button', { name: 'Yes, Disable gateway' }).click();
    await expect.poll(async () => (await invoke(t, 'rest', ws.token, 'get_gateway', { gatewayGuid: gw.guid })).body.enabled).toBe(false);
    await page.getByRole('button', { name: 'Close gateway' }).click();
  });

  it("Settings shows each refused field with the service's words, and an emptied expiry gives the default", async () => {
    await goTo('Settings');
    await page.getByLabel('Logs collector URL').fill('');
    await page.getByLabel('Traces collector URL').fill('');
    await page.getByRole('button', { name: 'Save collector' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: 'invalid parameters' });
    await expect.poll(() => refusal.locator('li').count()).toBe(2);
    expect(await refusal.locator('li').first().textContent()).toMatch(/^logsCollectorUrl: \S/);

    await page.getByLabel('Token label').fill('console default expiry');
    await page.getByLabel('Expires in days').fill('');
    await page.getByRole('button', { name: 'Create token' }).click();
    await expect.poll(() => page.getByLabel('Access token', { exact: true }).textContent()).toMatch(/^svcp_/);
    const made = (await invoke(t, 'rest', ws.token, 'list_access_tokens', {})).body.items.find((x: { label: string }) => x.label === 'console default expiry');
    expect(Date.parse(made.expiresAt) - Date.now()).toBeGreaterThan(89 * 86_400_000);
  });

  it('Settings removes the collector headers when asked in so many words (an emptied box keeps them: values are write-only)', async () => {
    const set = await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
      logsCollectorUrl: 'http://127.0.0.1:9/v1/logs',
      headers: { Authorization: 'Bearer console-collector-secret' },
    });
    expect(set.status).toBe(200);
    await goTo('Overview');
    await goTo('Settings');
    await page.getByRole('button', { name: 'Save collector' }).click();
    // The save has ended when the page says so: the stored headers were there before it, so the API alone cannot tell.
    await page.getByText('Collector saved').waitFor();
    expect((await invoke(t, 'rest', ws.token, 'get_otel_configuration', {})).body.headerNames).toEqual(['Authorization']);
    await page.getByLabel('Remove the collector headers').check();
    await page.getByRole('button', { name: 'Save collector' }).click();
    await expect.poll(async () => (await invoke(t, 'rest', ws.token, 'get_otel_configuration', {})).body.headerNames).toEqual([]);
    await expect.poll(() => page.getByLabel('Remove the collector headers').count()).toBe(0);
  });

  it("People sets a user's teams, and shows them by name", async () => {
    const member = await newMember(t, ws, []);
    const team = (await invoke(t, 'rest', ws.token, 'create_team', { name: 'Night shift' })).body;
    const email = (await invoke(t, 'rest', member.token, 'whoami', {})).body.user.emailAddress;
    await goTo('People');
    const form = page.getByRole('form', { name: `Teams of ${email}` });
    await closesBack(page.getByRole('button', { name: `Edit teams of ${email}` }), form, () => form.getByRole('button', { name: 'Cancel' }).click());
    await page.getByRole('button', { name: `Edit teams of ${email}` }).click();
    await form.getByLabel('Night shift').check();
    await form.getByRole('button', { name: 'Save teams' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_users', {})).body.items.find((u: { guid: string }) => u.guid === member.userGuid).teamGuids)
      .toEqual([team.guid]);
    await expect.poll(() => page.getByRole('row', { name: new RegExp(email) }).textContent()).toContain('Night shift');
  });

  it('Gateways marks an archived gateway as such and unarchives it', async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Shelved gateway' })).body;
    expect((await invoke(t, 'rest', ws.token, 'archive_gateway', { gatewayGuid: gw.guid })).status).toBe(200);
    await goTo('Gateways');
    await page.getByLabel('Show archived gateways').check();
    const row = page.getByRole('row', { name: /Shelved gateway/ });
    await expect.poll(() => row.getByRole('cell').nth(2).textContent()).toBe('yes');
    await row.getByRole('link', { name: 'Shelved gateway' }).click();
    // An archived gateway offers what it can do: be unarchived (not enabled, nor archived again, nor take servers, teams or tokens).
    await page.getByRole('button', { name: 'Unarchive gateway' }).waitFor();
    for (const name of ['Enable gateway', 'Assign server', 'Issue gateway token']) expect(await page.getByRole('button', { name }).count(), name).toBe(0);
    await page.getByRole('button', { name: 'Unarchive gateway' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_gateways', {})).body.items.some((g: { guid: string }) => g.guid === gw.guid))
      .toBe(true);
    await expect.poll(() => row.getByRole('cell').nth(2).textContent()).toBe('no');
    await page.getByLabel('Show archived gateways').uncheck();
  });

  it('Gateways keeps showing a gateway archived from its page, as archived, with the focus on "Unarchive gateway"', async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Archived from its page' })).body;
    // From another page: the list is read again on the way in.
    await goTo('Overview');
    await goTo('Gateways');
    await page.getByRole('link', { name: 'Archived from its page' }).click();
    await page.getByRole('button', { name: 'Archive gateway' }).click();
    await page.getByRole('button', { name: 'Yes, Archive gateway' }).click();
    await page.getByRole('button', { name: 'Unarchive gateway' }).waitFor();
    await page.getByText('This gateway is archived').waitFor();
    expect(new URL(page.url()).hash).toContain(`open=${gw.guid}`);
    expect(await page.getByLabel('Show archived gateways').isChecked()).toBe(true);
    // Shown again (with the archived ones), the gateway's detail gives the focus to what undoes the archiving.
    await expect.poll(() => page.evaluate('[document.activeElement.tagName, document.activeElement.textContent]')).toEqual(['BUTTON', 'Unarchive gateway']);
    await page.getByRole('button', { name: 'Unarchive gateway' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_gateways', {})).body.items.some((g: { guid: string }) => g.guid === gw.guid))
      .toBe(true);
    await page.getByLabel('Show archived gateways').uncheck();
    await page.getByRole('button', { name: 'Close gateway' }).click();
  });

  it('Hosts: creates, renames, disables and deletes a host, and lists its connections with their gateway', async () => {
    await goTo('Hosts');
    await page.getByLabel('Host name').fill('Build agent');
    await page.getByRole('button', { name: 'Create host' }).click();
    await page.getByRole('heading', { name: 'Build agent', level: 2 }).waitFor();
    const host = (await invoke(t, 'rest', ws.token, 'list_hosts', {})).body.items.find((h: { name: string }) => h.name === 'Build agent');
    expect(host).toMatchObject({ enabled: true, authenticationType: 'apiToken' });
    // A token issued for this host makes a connection the host's page lists, with its gateway by name.
    expect((await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid, hostGuid: host.guid })).status).toBe(201);
    await page.reload();
    const connections = page.getByRole('table', { name: 'Connections of Build agent' });
    await connections.getByRole('cell', { name: 'Main gateway', exact: true }).waitFor();
    await connections.getByRole('row').nth(1).getByRole('button').first().click();
    await page.getByRole('complementary', { name: 'Connection detail' }).getByRole('definition').filter({ hasText: 'Build agent' }).waitFor();

    // Renamed in place: Escape gives the button back unchanged, Enter saves.
    const hosts = page.getByRole('table', { name: 'Hosts' });
    await hosts.getByRole('button', { name: 'Rename Build agent' }).click();
    const box = page.getByLabel('New name for Build agent');
    await box.fill('Nightly build agent');
    await box.press('Escape');
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.textContent')).toBe('Rename Build agent');
    await hosts.getByRole('button', { name: 'Rename Build agent' }).click();
    await box.fill('Nightly build agent');
    await box.press('Enter');
    await hosts.getByRole('link', { name: 'Nightly build agent' }).waitFor();
    // The open connection's detail follows the new name.
    await page.getByRole('complementary', { name: 'Connection detail' }).getByRole('definition').filter({ hasText: 'Nightly build agent' }).waitFor();
    expect((await invoke(t, 'rest', ws.token, 'list_hosts', {})).body.items.find((h: { guid: string }) => h.guid === host.guid).name).toBe(
      'Nightly build agent',
    );
    // A refused name is shown with the service's words, and the box stays.
    await hosts.getByRole('button', { name: 'Rename Nightly build agent' }).click();
    await page.getByLabel('New name for Nightly build agent').fill('x'.repeat(300));
    await page.getByRole('button', { name: 'Save name' }).click();
    const tooLong = page.getByRole('form', { name: 'Rename Nightly build agent' }).getByRole('alert').filter({ hasText: 'newName' });
    await tooLong.waitFor();
    // One refused field is said once: the detail words it, no list repeats it.
    expect(await tooLong.locator('li').count()).toBe(0);
    expect((await tooLong.textContent())!.split('newName').length).toBe(2);
    await page.getByRole('button', { name: 'Cancel' }).click();

    await hosts.getByRole('button', { name: 'Disable Nightly build agent' }).click();
    await page.getByRole('button', { name: 'Yes, Disable Nightly build agent' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_hosts', {})).body.items.find((h: { guid: string }) => h.guid === host.guid).enabled)
      .toBe(false);
    await hosts.getByRole('button', { name: 'Enable Nightly build agent' }).waitFor();
    await shot('hosts');
    await hosts.getByRole('button', { name: 'Delete Nightly build agent' }).click();
    await page.getByRole('button', { name: 'Yes, Delete Nightly build agent' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_hosts', {})).body.items.some((h: { guid: string }) => h.guid === host.guid))
      .toBe(false);
    await expect.poll(() => page.getByRole('heading', { name: 'Nightly build agent' }).count()).toBe(0);
  });

  it('renames a gateway, a server and a team, and disables an assignment, each as the API says', async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Old gateway name' })).body;
    const assigned = await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.guid, inboundServerGuid: serverGuid });
    await goTo('Gateways');
    await page.getByRole('link', { name: 'Old gateway name' }).click();
    await page.getByRole('button', { name: 'Rename Old gateway name' }).click();
    await page.getByLabel('New name for Old gateway name').fill('New gateway name');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('heading', { name: 'New gateway name', level: 2 }).waitFor();
    expect((await invoke(t, 'rest', ws.token, 'get_gateway', { gatewayGuid: gw.guid })).body.name).toBe('New gateway name');
    const assignments = page.getByRole('table', { name: 'Servers of New gateway name' });
    await assignments.getByRole('button', { name: 'Disable Everything' }).click();
    await assignments.getByRole('button', { name: 'Yes, Disable Everything' }).click();
    await expect.poll(async () => (await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid: gw.guid })).body.items[0].enabled).toBe(false);
    await assignments.getByRole('button', { name: 'Enable Everything' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_gateway_assignments', { gatewayGuid: gw.guid })).body.items[0])
      .toMatchObject({ guid: assigned.body.guid, enabled: true });
    await page.getByRole('button', { name: 'Close gateway' }).click();

    const { serverGuid: renamedServer } = await registerServer(t, ws, { name: 'Server to rename', url: everything.url, authType: 'none' });
    await goTo('Servers');
    await page.getByRole('button', { name: 'Rename Server to rename' }).click();
    await page.getByLabel('New name for Server to rename').fill('Renamed server');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('table', { name: 'Inbound servers' }).getByRole('button', { name: 'Renamed server', exact: true }).waitFor();
    expect((await invoke(t, 'rest', ws.token, 'get_inbound_server', { inboundServerGuid: renamedServer })).body.name).toBe('Renamed server');

    const team = (await invoke(t, 'rest', ws.token, 'create_team', { name: 'Day shift' })).body;
    await goTo('People');
    await page.getByRole('button', { name: 'Rename Day shift' }).click();
    await page.getByLabel('New name for Day shift').fill('Early shift');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('table', { name: 'Teams' }).getByRole('cell', { name: 'Early shift', exact: true }).waitFor();
    expect((await invoke(t, 'rest', ws.token, 'list_teams', {})).body.items.find((x: { guid: string }) => x.guid === team.guid).name).toBe('Early shift');
  });

  it('People deletes a role, moving its users to the role picked', async () => {
    const doomed = (await invoke(t, 'rest', ws.token, 'create_role', { name: 'Short-lived', grants: {} })).body;
    const heir = (await invoke(t, 'rest', ws.token, 'create_role', { name: 'Heir', grants: {} })).body;
    const member = await newMember(t, ws, []);
    expect((await invoke(t, 'rest', ws.token, 'set_user_role', { userGuid: member.userGuid, roleGuid: doomed.guid })).status).toBe(200);
    // From another page: the roles are read again on the way in.
    await goTo('Overview');
    await goTo('People');
    const form = page.getByRole('form', { name: 'Delete role Short-lived' });
    // Kept at first: Cancel closes the question.
    await closesBack(page.getByRole('button', { name: 'Delete Short-lived' }), form, () => form.getByRole('button', { name: 'Cancel' }).click());
    await page.getByRole('button', { name: 'Delete Short-lived' }).click();
    // The role itself is not offered as its own heir.
    expect(await form.getByLabel('Move its users to').locator('option', { hasText: 'Short-lived' }).count()).toBe(0);
    await form.getByLabel('Move its users to').selectOption({ label: 'Heir' });
    await form.getByRole('button', { name: 'Delete Short-lived and move its users' }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_roles', {})).body.items.some((r: { guid: string }) => r.guid === doomed.guid))
      .toBe(false);
    const moved = (await invoke(t, 'rest', ws.token, 'list_users', {})).body.items.find((u: { guid: string }) => u.guid === member.userGuid);
    expect(moved.roleGuid).toBe(heir.guid);
    await expect.poll(() => page.getByRole('table', { name: 'Roles' }).getByRole('cell', { name: 'Short-lived', exact: true }).count()).toBe(0);
  });

  it("Servers sets an identity's access, replaces its headers (never shown) and deletes it", async () => {
    const { serverGuid: keyed, identityGuid } = await registerServer(t, ws, {
      name: 'Keyed identities',
      url: headerUpstream.url,
      authType: 'headers',
      headers: { 'X-Api-Key': 'console-header-secret' },
    });
    const identityName = (await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: keyed })).body.items[0].name;
    await goTo('Servers');
    const opener = page.getByRole('button', { name: 'Keyed identities', exact: true });
    await opener.click();
    const identities = page.getByRole('table', { name: 'Identities of Keyed identities' });
    // The open server is in the URL, as a gateway is: a reload shows it again; Close server gives the focus back to its name.
    await identities.waitFor();
    expect(new URL(page.url()).hash).toBe(`#/servers?open=${keyed}`);
    await page.reload();
    await identities.waitFor();
    await page.getByRole('button', { name: 'Close server' }).click();
    await expect.poll(() => identities.count()).toBe(0);
    expect(new URL(page.url()).hash).toBe('#/servers');
    await opener.click();
    await page.getByRole('button', { name: 'Close server' }).click();
    await expect.poll(() => identities.count()).toBe(0);
    await expect.poll(() => isFocused(opener)).toBe(true);
    await opener.click();
    const access = identities.getByLabel(`Access to ${identityName}`);
    const before = (await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: keyed })).body.items[0].accessControl;
    const other = before === 'private' ? 'global' : 'private';
    await access.selectOption(other);
    await expect.poll(async () => (await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: keyed })).body.items[0].accessControl).toBe(other);

    await identities.getByRole('button', { name: `Replace headers of ${identityName}` }).click();
    await shot('servers-identities');
    const form = page.getByRole('form', { name: `Replace the headers of ${identityName}` });
    // Values are write-only: the box starts empty.
    expect(await form.getByLabel('New headers').inputValue()).toBe('');
    await form.getByLabel('New headers').fill('X-Api-Key: console-replaced-secret');
    await form.getByRole('button', { name: 'Replace headers' }).click();
    await expect.poll(() => form.count()).toBe(0);
    expect(await page.content()).not.toContain('console-replaced-secret');
    // Replaced by set_identity_headers (its audit record says so, naming the header, never its value).
    const audited = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { operation: 'set_identity_headers', target_guid: identityGuid! } });
    expect(audited.body.items).toHaveLength(1);
    expect(audited.body.items[0].outcome).toBe('ok');
    expect(JSON.stringify(audited.body)).not.toContain('console-replaced-secret');

    await identities.getByRole('button', { name: `Delete ${identityName}` }).click();
    await identities.getByRole('button', { name: `Yes, Delete ${identityName}` }).click();
    await expect
      .poll(async () => (await invoke(t, 'rest', ws.token, 'list_identities', { inboundServerGuid: keyed })).body.items.map((i: { guid: string }) => i.guid))
      .not.toContain(identityGuid);
    await expect.poll(() => identities.getByRole('cell', { name: identityName, exact: true }).count()).toBe(0);
    await expect.poll(() => focusedText()).toBe('Identities of Keyed identities');
  });

  it('is usable from the keyboard: Tab reaches the navigation links and Enter follows one', async () => {
    // A fresh document (the hash alone would not reload it), focus on nothing yet.
    await page.goto(`${base}/console/#/overview`);
    await page.reload();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    const focused = () => page.evaluate('document.activeElement && document.activeElement.textContent');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Overview');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Logs');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/logs');
    // Focus moves to the new page's heading (once the page has rendered), so the next Tab goes into the page, not back to the top.
    await expect.poll(() => page.evaluate('document.activeElement.tagName')).toBe('H1');
    expect(await focused()).toBe('Logs');
  });

  it('on a narrow window every navigation link is in sight and no page scrolls sideways', async () => {
    const narrow = await newPage(420);
    await signIn(narrow, ws.token);
    for (const name of PAGES) {
      await goTo(name, narrow);
      await expect.poll(() => narrow.locator('main .loading').count()).toBe(0);
      for (const link of PAGES) {
        const box = (await narrow.getByRole('link', { name: link, exact: true }).boundingBox())!;
        expect(box.x >= 0 && box.x + box.width <= 420, `${link} on ${name}`).toBe(true);
      }
      expect(await narrow.evaluate('document.scrollingElement.scrollWidth <= innerWidth'), name).toBe(true);
      if (name === 'Overview') await shot('overview-narrow', narrow);
    }
    await narrow.close();
  });

  it("shows a capability-less user why a page is empty, by the capability's label", async () => {
    const member = await newMember(t, ws, []);
    const other = await newPage(420);
    // What the role does not allow is not asked of the service (each was a 403 on a plain page visit).
    const refused: string[] = [];
    other.on('response', (r) => void (r.status() === 403 && refused.push(r.url())));
    await signIn(other, member.token);
    await other.getByRole('link', { name: 'Logs', exact: true }).click();
    await expect.poll(() => other.getByRole('alert').first().textContent()).toContain('Query and export logs');
    await other.getByRole('link', { name: 'Audit', exact: true }).click();
    await expect.poll(() => other.getByRole('alert').first().textContent()).toContain('View the audit log');
    await shot('no-capability-narrow', other);
    // What the user may not do is not offered (it could only be refused); what needs no capability is.
    await other.getByRole('link', { name: 'Servers', exact: true }).click();
    await other.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await other.getByRole('link', { name: 'People', exact: true }).click();
    await other.getByRole('heading', { name: 'People', level: 1 }).waitFor();
    await other.getByRole('link', { name: 'Settings', exact: true }).click();
    await other.getByRole('button', { name: 'Create token' }).waitFor();
    expect(await other.getByRole('button', { name: 'Save collector' }).count()).toBe(0);
    await other.getByRole('link', { name: 'People', exact: true }).click();
    await other.getByRole('heading', { name: 'People', level: 1 }).waitFor();
    expect(await other.getByRole('button', { name: 'Create team' }).count()).toBe(0);
    await other.getByRole('link', { name: 'Servers', exact: true }).click();
    await other.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    expect(await other.getByRole('button', { name: 'Register server' }).count()).toBe(0);
    expect(refused).toEqual([]);
    await other.close();
  });

  it('shows a gateway to a role that may only view it without the headings of what it may not do', async () => {
    const member = await newMember(t, ws, ['viewAllGateways', 'viewAllServers']);
    const other = await newPage(1280);
    await signIn(other, member.token);
    await goTo('Gateways', other);
    await other.getByRole('link', { name: 'Main gateway' }).click();
    const assignments = other.getByRole('table', { name: 'Servers of Main gateway' });
    await assignments.getByRole('cell', { name: 'Everything', exact: true }).waitFor();
    await other.getByRole('heading', { name: 'Tool naming', level: 3 }).waitFor();
    for (const name of ['Teams', 'Gateway token']) expect(await other.getByRole('heading', { name, exact: true }).count(), name).toBe(0);
    // Nor an Actions column with nothing in it, here or on the Servers page.
    expect(await assignments.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
    await goTo('Servers', other);
    const servers = other.getByRole('table', { name: 'Inbound servers' });
    await servers.getByRole('button', { name: 'Everything', exact: true }).waitFor();
    expect(await servers.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
    await other.close();
  });

  it('follows a change of its own rights: a refusal for a capability reads them again, and what is no longer allowed goes', async () => {
    const member = await newMember(t, ws, ['manageTeams']);
    const other = await newPage(1280);
    await signIn(other, member.token);
    await other.getByRole('link', { name: 'People', exact: true }).click();
    await other.getByRole('button', { name: 'Create team' }).waitFor();
    // An administrator takes the capability away meanwhile (another tab, the API).
    const bare = await invoke(t, 'rest', ws.token, 'create_role', { name: `Bare ${Date.now()}`, grants: {} });
    expect((await invoke(t, 'rest', ws.token, 'set_user_role', { userGuid: member.userGuid, roleGuid: bare.body.guid })).status).toBe(200);
    // Submitted while still offered, the refusal reads the rights again (had anything read them already, the form is gone).
    await other
      .getByLabel('Team name')
      .fill('Too late', { timeout: 2_000 })
      .then(() => other.getByRole('button', { name: 'Create team' }).click({ timeout: 2_000 }))
      .catch(() => undefined);
    await expect.poll(() => other.getByRole('button', { name: 'Create team' }).count()).toBe(0);
    await other.close();
  });

  it('signs out: the token is gone and sign-in is shown', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Access token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('goes back to sign-in when the token stops working (a 401), saying why', async () => {
    const member = await newMember(t, ws, ['exportLogs']);
    await signIn(page, member.token);
    await invoke(t, 'rest', ws.token, 'deactivate_user', { userGuid: member.userGuid });
    // The page's own first calls may already have met the 401 and left the shell; moving
    // to Logs by its hash (what the link does) makes one more call either way.
    await page.evaluate("location.hash = '#/logs'");
    await page.getByLabel('Access token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.getByRole('alert').textContent()).toMatch(/Your session ended: the access token is no longer accepted/);
  });

  it('keeps the token when the service cannot be reached, and offers to try again', async () => {
    const other = await newPage(1280);
    await signIn(other, ws.token);
    await other.route('**/whoami', (route) => route.abort());
    await other.reload();
    await expect.poll(() => other.getByRole('alert').textContent()).toMatch(/cannot be reached/);
    expect(await other.evaluate(() => sessionStorage.getItem('svc-admin-token'))).toBe(ws.token);
    await other.unroute('**/whoami');
    await other.getByRole('button', { name: 'Try again' }).click();
    await other.getByRole('navigation', { name: 'Main' }).waitFor();
    await other.close();
  });

  it('shows a refused choice as refused: the select goes back to what is stored, with the reason', async () => {
    // A workspace of its own, whose one administrator cannot put themselves on a role that cannot give roles back (a 409).
    const lone = await newWorkspace(t);
    const nobody = (await invoke(t, 'rest', lone.token, 'create_role', { name: 'Nobody' })).body;
    const other = await newPage(1280);
    await signIn(other, lone.token);
    await goTo('People', other);
    const select = other.getByLabel(`Role of ${(await invoke(t, 'rest', lone.token, 'whoami', {})).body.user.emailAddress}`);
    await select.waitFor();
    const stored = await select.inputValue();
    await select.selectOption(nobody.guid);
    await expect.poll(() => other.getByRole('alert').first().textContent()).toMatch(/nobody could give roles back/);
    await expect.poll(() => select.inputValue()).toBe(stored);
    // An invitation starts with no capabilities unless a role is picked.
    expect(await other.getByRole('form', { name: 'Invite a user' }).getByLabel('Role').inputValue()).toBe('');
    // Invited so, the user is on the workspace's Member role, which the page then knows: their role reads by name.
    await other.getByRole('form', { name: 'Invite a user' }).getByLabel('Email').fill('invited@lone.example');
    await other.getByRole('button', { name: 'Invite user' }).click();
    const invited = other.getByLabel('Role of invited@lone.example');
    await expect.poll(async () => (await invited.locator('option:checked').textContent())?.trim() ?? '').not.toBe('');
    await other.close();
  });

  it('Logs shows calls made since it opened once refreshed', async () => {
    const other = await newPage(1280);
    await signIn(other, ws.token);
    await goTo('Logs', other);
    // The page's first rows are in: its boxes are set from the view by then (typing before would be overwritten).
    await expect.poll(() => bodyRows(other).count()).toBeGreaterThan(0);
    await other.getByLabel('Trace id').fill('f'.repeat(32));
    await other.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => other.getByRole('cell', { name: 'No calls in this range.' }).count()).toBe(1);
    await ingest(t, [logRow(ws.organizationGuid, { traceId: 'f'.repeat(32), toolName: 'refreshed-tool', createdAt: Date.now() + 1_000 })]);
    await new Promise((r) => setTimeout(r, 1_100));
    await other.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => bodyRows(other).first().textContent()).toContain('refreshed-tool');
    await other.close();
  });
});
