import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { newGuid } from '../src/core/ids.js';
import { invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { listenLoopback, registerServer } from './helpers/gateway.js';
import { newMember } from './helpers/members.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * The web console (contract 8.5) in a real headless Chromium against the real
 * service: sign in, every page with real data, the logs' filters and a call's
 * detail, creating a team and a gateway, issuing a token, a capability-less view,
 * signing out. Screenshots of each page go to test-results/console/.
 */
const CHROMIUM = '/usr/bin/chromium';
const SHOTS = path.resolve('test-results/console');
// One store kind is enough for a browser: the console sees only REST.
const run = fs.existsSync(CHROMIUM) && storeKind() === 'pglite';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let browser: Browser;
let page: Page;
let serverGuid: string;
let gatewayGuid: string;
const seeded: { traceId: string; toolName: string }[] = [];

async function signIn(p: Page, token: string) {
  await p.goto(`${base}/console`);
  await p.getByLabel('Access token').fill(token);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Main' }).waitFor();
}

const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

describe.runIf(run)('the web console', () => {
  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
    base = await listenLoopback(t);
    ws = await newWorkspace(t);
    serverGuid = (await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' })).serverGuid;
    gatewayGuid = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Main gateway' })).body.guid;
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: serverGuid });
    // Calls of the last hours, through the normal ingest path, naming the real gateway, server and user.
    const now = Date.now();
    const rows = Array.from({ length: 240 }, (_, i) => {
      const toolName = ['echo', 'add', 'longRunningOperation', 'printEnv'][i % 4]!;
      const traceId = newGuid().replaceAll('-', '');
      if (i < 4) seeded.push({ traceId, toolName });
      return logRow(ws.organizationGuid, {
        createdAt: now - i * 60_000,
        toolName,
        durationMs: 5 + ((i * 37) % 400),
        status: i % 9 === 0 ? 'error' : 'ok',
        errorMessage: i % 9 === 0 ? 'upstream said no' : null,
        outboundGatewayGuid: gatewayGuid,
        inboundServerGuid: serverGuid,
        userGuid: ws.userGuid,
        traceId,
        requestBody: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: toolName, arguments: { n: i } } }),
        responseBody: JSON.stringify({ jsonrpc: '2.0', id: i, result: { content: [{ type: 'text', text: `answer ${i}` }] } }),
        requestHeaders: { 'content-type': 'application/json', authorization: 'Bearer svcg_hidden_value' },
      });
    });
    await ingest(t, rows);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await everything?.close();
  });

  it('signs in with an access token kept in sessionStorage only', async () => {
    await page.goto(`${base}/console`);
    await page.getByLabel('Access token').fill('svcp_wrong_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/token/i);
    await signIn(page, ws.token);
    for (const name of ['Overview', 'Logs', 'Alerts', 'Servers', 'Gateways', 'People', 'Audit', 'Settings']) {
      await expect(page.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
    }
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['svc-admin-token']);
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
  });

  it('Overview shows totals, a chart and the top tools from get_usage_report', async () => {
    const started = Date.now();
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByRole('list', { name: 'Totals' }).getByText('240').waitFor();
    const renderedMs = Date.now() - started;
    await page.locator('.chart canvas').first().waitFor();
    const topTools = page.getByRole('table', { name: 'Top tools' });
    await topTools.getByRole('cell', { name: 'echo', exact: true }).waitFor();
    expect(await topTools.getByRole('row').count()).toBe(5);
    await shot('overview');
    console.error(`console: Overview rendered with data in ${renderedMs} ms`);
  });

  it('Logs lists calls with Time, Tool, Status and Duration, filters through the URL and opens a call with its bodies and trace', async () => {
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    const table = page.getByRole('table');
    for (const header of ['Time', 'Tool', 'Status', 'Duration']) await table.getByRole('columnheader', { name: header, exact: true }).waitFor();
    await expect.poll(() => page.locator('main table tbody tr').count()).toBe(50);
    await page.getByLabel('Trace id').fill(seeded[1]!.traceId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const rows = page.locator('main table tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    await expect.poll(() => rows.first().textContent()).toContain(seeded[1]!.toolName);
    expect(page.url()).toContain(`trace_id=${seeded[1]!.traceId}`);
    await shot('logs');
    await table.getByRole('button', { name: /Details of the call/ }).click();
    const detail = page.getByRole('complementary', { name: 'Call detail' });
    await expect.poll(() => detail.getByLabel('Response body').textContent()).toContain('answer 1');
    expect(await detail.getByLabel('Request headers').textContent()).toContain('[REDACTED]');
    expect(await detail.getByLabel('Request headers').textContent()).not.toContain('svcg_hidden_value');
    await shot('logs-detail');
    // The view is a link: a new tab opened on it shows the same filtered calls.
    const shared = await browser.newPage();
    await shared.goto(`${base}/console`);
    await shared.evaluate((token) => sessionStorage.setItem('svc-admin-token', token), ws.token);
    await shared.goto(page.url());
    await shared.reload();
    await expect.poll(() => shared.locator('main table tbody tr').count()).toBe(1);
    await shared.close();
  });

  it('Servers, Alerts, Audit and Settings render with real data', async () => {
    await page.getByRole('link', { name: 'Servers', exact: true }).click();
    await page.getByRole('table', { name: 'Inbound servers' }).getByRole('button', { name: 'Everything', exact: true }).waitFor();
    await shot('servers');
    await page.getByRole('link', { name: 'Alerts', exact: true }).click();
    await page.getByRole('table', { name: 'Alerts, newest first' }).waitFor();
    await shot('alerts');
    await page.getByRole('link', { name: 'Audit', exact: true }).click();
    await page.getByRole('table', { name: 'Admin operations, newest first' }).getByRole('cell', { name: 'assign_server_to_gateway' }).waitFor();
    await shot('audit');
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await page
      .getByRole('table', { name: 'Access and gateway tokens' })
      .getByRole('cell', { name: 'test' })
      .first()
      .waitFor({ timeout: 10_000 })
      .catch(() => undefined);
    await page.getByLabel('Logs collector URL').waitFor();
    await shot('settings');
  });

  it('creates a team on People, with role capability checkboxes from list_capabilities', async () => {
    await page.getByRole('link', { name: 'People', exact: true }).click();
    await page.getByLabel('Team name').fill('Platform');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('table', { name: 'Teams' }).getByRole('cell', { name: 'Platform', exact: true }).waitFor();
    await expect(page.getByRole('checkbox', { name: 'View the audit log' }).count()).resolves.toBeGreaterThan(0);
    await shot('people');
    const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
    expect(teams.body.items.map((x: any) => x.name)).toContain('Platform');
  });

  it('creates a gateway, shows its assignment and naming, and issues a token shown once with the connect URL', async () => {
    await page.getByRole('link', { name: 'Gateways', exact: true }).click();
    await page.getByLabel('Gateway name').fill('Console gateway');
    await page.getByRole('button', { name: 'Create gateway' }).click();
    await page.getByRole('heading', { name: 'Console gateway' }).waitFor();
    await page.getByLabel('Tool naming mode').waitFor();
    await page.getByLabel('Server to assign').selectOption({ label: 'Everything' });
    await page.getByRole('button', { name: 'Assign server' }).click();
    await page.getByRole('table', { name: 'Servers of Console gateway' }).getByRole('cell', { name: 'Everything', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Issue gateway token' }).click();
    const shown = page.getByLabel('Gateway token', { exact: true });
    await expect.poll(() => shown.textContent()).toMatch(/^svcg_/);
    await page.getByRole('button', { name: 'Copy gateway token' }).waitFor();
    await shot('gateways');
    const listed = await invoke(t, 'rest', ws.token, 'list_gateways', {});
    expect(listed.body.items.map((g: any) => g.name)).toContain('Console gateway');
  });

  it("shows a capability-less user why a page is empty, by the capability's label", async () => {
    const member = await newMember(t, ws, []);
    const other = await browser.newPage({ viewport: { width: 420, height: 800 } });
    await signIn(other, member.token);
    await other.getByRole('link', { name: 'Logs', exact: true }).click();
    await expect.poll(() => other.getByRole('alert').first().textContent()).toContain('Query and export logs');
    await other.getByRole('link', { name: 'Audit', exact: true }).click();
    await expect.poll(() => other.getByRole('alert').first().textContent()).toContain('View the audit log');
    await other.screenshot({ path: path.join(SHOTS, 'no-capability-narrow.png'), fullPage: true });
    await other.close();
  });

  it('signs out: the token is gone and sign-in is shown', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Access token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it('goes back to sign-in when the token stops working (a 401)', async () => {
    const member = await newMember(t, ws, ['exportLogs']);
    await signIn(page, member.token);
    await invoke(t, 'rest', ws.token, 'deactivate_user', { userGuid: member.userGuid });
    // The page's own first calls may already have met the 401 and left the shell; moving
    // to Logs by its hash (what the link does) makes one more call either way.
    await page.evaluate("location.hash = '#/logs'");
    await page.getByLabel('Access token').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});
