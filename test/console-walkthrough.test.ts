import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { chromiumInstalled } from './helpers/chromium.js';
import { ingest, logRow } from './helpers/call-logs.js';
import { signedInPage, startConsoleApp, stopConsoleApp, type ConsoleApp } from './helpers/console-app.js';
import { insertServer } from './helpers/fixtures.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, storeKind, type TestApp } from './helpers/harness.js';

/** What a first-time admin met walking through the console: names where ids were, and a next step where the page stopped. */
const run = chromiumInstalled() && storeKind() === 'pglite';

let app: ConsoleApp;
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let page: Page;

describe.runIf(run)('the console, walked through by a new admin', () => {
  beforeAll(async () => {
    app = await startConsoleApp();
    ({ t, base, ws } = app);
    page = await signedInPage(app, '#/people', ws.token);
    await page.getByRole('heading', { name: 'People', level: 1 }).waitFor();
  }, 180_000);

  afterAll(() => stopConsoleApp(app));

  it('says, after an invitation, how the invited user gets a token to sign in with', async () => {
    const form = page.getByRole('form', { name: 'Invite a user' });
    await form.getByLabel('Email').fill('walk@example.com');
    await form.getByRole('button', { name: 'Invite user' }).click();
    const said = page.getByRole('status').filter({ hasText: 'walk@example.com is invited' });
    await said.waitFor();
    const users = (await invoke(t, 'rest', ws.token, 'list_users', {})).body.items as { guid: string; emailAddress: string }[];
    const invited = users.find((u) => u.emailAddress === 'walk@example.com')!;
    expect(await said.innerText()).toContain(`npm run admin -- create-token --user ${invited.guid} --label console`);
  });

  it("says what a gateway's teams are for, and where to make one when there is none", async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Walk gateway' })).body;
    await page.goto(`${base}/console/#/gateways?open=${gw.guid}`);
    await page.getByRole('heading', { name: 'Teams', level: 3 }).waitFor();
    await page.getByText('It grants nothing: whoever holds a gateway token for it may call it.').waitFor();
    await page.getByText(/No teams yet: create one on the People page/).waitFor();
    await page.getByRole('link', { name: 'People', exact: true }).last().click();
    await page.getByRole('heading', { name: 'People', level: 1 }).waitFor();
  });

  it('names the calls of no tool, no one server and no user on the Overview, not "none"', async () => {
    const organizationGuid = ws.organizationGuid;
    await ingest(t, [
      logRow(organizationGuid, { type: 'initialize', method: 'initialize', toolName: null, inboundServerGuid: null, userGuid: null }),
      logRow(organizationGuid),
    ]);
    await page.goto(`${base}/console/#/overview`);
    const tools = page.getByRole('table', { name: 'Top tools' });
    await tools.getByRole('cell', { name: 'not a tool call' }).waitFor();
    await page.getByRole('table', { name: 'Top servers' }).getByRole('cell', { name: 'the gateway itself' }).waitFor();
    await page.getByRole('table', { name: 'Top users' }).getByRole('cell', { name: 'no user' }).waitFor();
    expect(await page.getByRole('cell', { name: 'none', exact: true }).count()).toBe(0);
  });

  it("names an audit record's targets, and picks its actor by email", async () => {
    const team = (await invoke(t, 'rest', ws.token, 'create_team', { name: 'Audited team' })).body;
    await page.goto(`${base}/console/#/audit`);
    const table = page.getByRole('table', { name: /Admin operations/ });
    const row = table.getByRole('row').filter({ hasText: 'create_team' });
    await row.getByRole('cell', { name: 'Audited team' }).waitFor();
    expect(await row.innerText()).not.toContain(team.guid.slice(0, 8));
    // The actor is a choice by email, as the table shows it (a box took an email and found nothing).
    const filters = page.getByRole('form', { name: 'Audit filters' });
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user;
    await filters.getByLabel('Actor').selectOption({ label: me.emailAddress });
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(new RegExp(`actor_user_guid=${me.guid}`));
    await row.waitFor();
  });

  it('says a collector was saved, until the form is changed again', async () => {
    await page.goto(`${base}/console/#/settings`);
    const form = page.getByRole('form', { name: 'Forward call logs and traces' });
    await form.getByLabel('Logs collector URL').fill('http://127.0.0.1:9/v1/logs');
    await form.getByRole('button', { name: 'Save collector' }).click();
    const saved = page.getByRole('status').filter({ hasText: 'Collector saved' });
    await saved.waitFor();
    await form.getByLabel('Traces collector URL').fill('http://127.0.0.1:9/v1/traces');
    await saved.waitFor({ state: 'detached' });
  });

  it('says what archiving a gateway and deleting a server do before they are done', async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Gateway to archive' })).body;
    await page.goto(`${base}/console/#/gateways?open=${gw.guid}`);
    await page.getByRole('button', { name: 'Archive gateway' }).click();
    const archive = page.getByRole('group', { name: 'Confirm: Archive gateway' });
    expect(await archive.innerText()).toContain('Every connection through it stops working');
    await archive.getByRole('button', { name: 'Cancel' }).click();
    const serverGuid = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const server = (await invoke(t, 'rest', ws.token, 'get_inbound_server', { inboundServerGuid: serverGuid })).body;
    await page.goto(`${base}/console/#/servers`);
    await page.getByRole('button', { name: `Delete ${server.name}` }).click();
    const remove = page.getByRole('group', { name: `Confirm: Delete ${server.name}` });
    expect(await remove.innerText()).toContain('it cannot be restored');
    await remove.getByRole('button', { name: 'Cancel' }).click();
  });

  it("keeps an archived gateway's buttons on one line each at 375 px", async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Archived at 375' })).body;
    expect((await invoke(t, 'rest', ws.token, 'archive_gateway', { gatewayGuid: gw.guid })).status).toBe(200);
    const narrow = await signedInPage(app, `#/gateways?open=${gw.guid}`, ws.token, 375);
    const close = (await narrow.getByRole('button', { name: 'Close gateway' }).boundingBox())!;
    for (const name of ['Unarchive gateway', 'Rename Archived at 375']) {
      const box = (await narrow.getByRole('button', { name }).boundingBox())!;
      expect(box.height, name).toBeLessThanOrEqual(close.height);
    }
    await narrow.close();
  });
});
