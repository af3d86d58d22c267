import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumInstalled, launchChromium } from './helpers/chromium.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { newMember, type Member } from './helpers/members.js';
import { freePort } from './helpers/ports.js';
import { registerServer } from './helpers/gateway.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * The console for roles holding few capabilities: what the role allows is offered
 * (inviting, setting a role, without manageRoles to list the roles), and what it does
 * not is not (an Actions column with nothing in it).
 */
const run = chromiumInstalled() && storeKind() === 'pglite';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let browser: Browser;
let inviter: Member;
let roleSetter: Member;
let nobody: Member;
let everything: Upstream;

async function signedIn(token: string, hash: string): Promise<Page> {
  const p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  p.setDefaultTimeout(20_000);
  await p.goto(`${base}/console/${hash}`);
  await p.getByLabel('Access token').fill(token);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Main' }).waitFor();
  return p;
}

async function peoplePage(token: string): Promise<Page> {
  const p = await signedIn(token, '#/people');
  await p.getByRole('table', { name: 'Users' }).getByRole('row').nth(1).waitFor();
  return p;
}

describe.runIf(run)('the console, for a role with few capabilities', () => {
  beforeAll(async () => {
    const port = await freePort();
    [t, everything] = await Promise.all([startTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }), startEverything('streamableHttp')]);
    await t.app.listen({ port, host: '127.0.0.1' });
    base = `http://127.0.0.1:${port}`;
    ws = await newWorkspace(t);
    [inviter, roleSetter, nobody] = await Promise.all([newMember(t, ws, ['inviteUsers']), newMember(t, ws, ['manageUserRoles']), newMember(t, ws, [])]);
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await everything?.close();
  });

  it('offers inviting to a role that may invite but not list roles, with the roles its users hold', async () => {
    const p = await peoplePage(inviter.token);
    const form = p.getByRole('form', { name: 'Invite a user' });
    await form.getByLabel('Email').fill('invited-by-inviter@example.test');
    await form.getByLabel('Role').selectOption({ value: roleSetter.roleGuid });
    await form.getByRole('button', { name: 'Invite user' }).click();
    await p.getByRole('cell', { name: 'invited-by-inviter@example.test', exact: true }).waitFor();
    const users = (await invoke(t, 'rest', ws.token, 'list_users', {})).body.items as { emailAddress: string; roleGuid: string }[];
    expect(users.find((u) => u.emailAddress === 'invited-by-inviter@example.test')?.roleGuid).toBe(roleSetter.roleGuid);
    await p.close();
  });

  it("offers setting a user's role to a role that may set roles but not list them", async () => {
    const p = await peoplePage(roleSetter.token);
    await p.getByLabel(`Role of ${nobody.email}`).selectOption({ value: inviter.roleGuid });
    await expect
      .poll(
        async () =>
          ((await invoke(t, 'rest', ws.token, 'list_users', {})).body.items as { guid: string; roleGuid: string }[]).find((u) => u.guid === nobody.userGuid)
            ?.roleGuid,
      )
      .toBe(inviter.roleGuid);
    await p.close();
  });

  it('shows no Actions column where the role may do none of its actions', async () => {
    const p = await peoplePage(nobody.token);
    for (const table of ['Users', 'Teams']) {
      await expect(p.getByRole('table', { name: table }).getByRole('columnheader', { name: 'Actions' }).count(), table).resolves.toBe(0);
    }
    await p.close();
  });

  it("shows a server's identities with no Actions column to a role that may list them but not manage them", async () => {
    const { serverGuid } = await registerServer(t, ws, {
      name: 'Keyed',
      url: everything.url,
      authType: 'headers',
      headers: { 'X-Api-Key': 'k' },
      accessControl: 'global',
    });
    const reader = await newMember(t, ws, ['viewAllServers', 'accessAllIdentities']);
    const p = await signedIn(reader.token, `#/servers?open=${serverGuid}`);
    const identities = p.getByRole('table', { name: 'Identities of Keyed' });
    await identities.getByRole('row').nth(1).waitFor();
    await expect(identities.getByRole('columnheader', { name: 'Actions' }).count()).resolves.toBe(0);
    await p.close();
  });

  it("names the Overview's top users as text, not links to Logs, for a role that may see usage but not read the calls", async () => {
    const viewer = await newMember(t, ws, ['viewUsageReports']);
    await ingest(t, [logRow(ws.organizationGuid, { createdAt: Date.now() - 60_000, userGuid: viewer.userGuid })]);
    const p = await signedIn(viewer.token, '#/overview');
    const users = p.getByRole('table', { name: 'Top users' });
    await users.getByRole('cell', { name: viewer.email, exact: true }).waitFor();
    await expect(users.getByRole('link').count()).resolves.toBe(0);
    await p.close();
  });

  it('opens an alert with no links to Logs for a role that may see alerts and servers but not read the calls', async () => {
    const { serverGuid } = await registerServer(t, ws, { name: 'Alerting', url: everything.url, authType: 'none' });
    await t.runtime.services.alerts.raise({
      organizationGuid: ws.organizationGuid,
      code: 'upstream_call_failed',
      messageType: 'error',
      subject: 'Calls to server Alerting keep failing',
      message: 'They fail.',
      debugContext: { traceId: 'a'.repeat(32) },
      relatedResourceIds: [serverGuid],
    });
    const watcher = await newMember(t, ws, ['seeAllAlerts', 'viewAllServers']);
    const p = await signedIn(watcher.token, '#/alerts');
    await p.getByRole('button', { name: 'Calls to server Alerting keep failing' }).click();
    const record = p.getByRole('complementary', { name: 'Alert record' });
    await record.getByText(serverGuid).waitFor();
    await expect(record.getByRole('link').count()).resolves.toBe(0);
    await p.close();
  });

  it('shows Logs, Audit and Alerts to a role that may not read them as why only, with no filters or controls that could only be refused', async () => {
    const p = await signedIn(nobody.token, '#/logs');
    for (const [hash, heading] of [
      ['#/logs', 'Logs'],
      ['#/audit', 'Audit'],
      ['#/alerts', 'Alerts'],
    ]) {
      await p.goto(`${base}/console/${hash}`);
      await p.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await p.getByRole('alert').filter({ hasText: 'Your role does not allow this.' }).waitFor();
      await expect(p.locator('main form').count(), heading).resolves.toBe(0);
      await expect(p.locator('main').getByRole('button').count(), heading).resolves.toBe(0);
      await expect(p.locator('main').getByRole('combobox').count(), heading).resolves.toBe(0);
    }
    await p.close();
  });
});
