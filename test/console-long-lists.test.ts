import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { chromiumInstalled, launchChromium } from './helpers/chromium.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';
import { registerServer } from './helpers/gateway.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

/**
 * The console with many items and long names: a detail opened below a long list comes
 * into view with the focus on its heading and closes on Escape back to what opened it;
 * a long name without spaces never widens a narrow page.
 */
const run = chromiumInstalled() && storeKind() === 'pglite';
const GATEWAYS = 120;
const LONG = `Gateway_${'ü中🚀'.repeat(4)}_${'x'.repeat(120)}`;

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let everything: Upstream;
let browser: Browser;
let longGuid: string;

async function signedIn(width: number, hash: string): Promise<Page> {
  const p = await browser.newPage({ viewport: { width, height: 800 } });
  p.setDefaultTimeout(20_000);
  await p.goto(`${base}/console/${hash}`);
  await p.getByLabel('Access token').fill(ws.token);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Main' }).waitFor();
  return p;
}

const isFocused = (l: Locator) => l.evaluate((e) => e === e.ownerDocument.activeElement);
const inView = (l: Locator) =>
  l.evaluate((e) => e.getBoundingClientRect().top >= 0 && e.getBoundingClientRect().bottom <= e.ownerDocument.defaultView!.innerHeight);

describe.runIf(run)('the console with long lists and long names', () => {
  beforeAll(async () => {
    const port = await freePort();
    [t, everything] = await Promise.all([startTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }), startEverything('streamableHttp')]);
    await t.app.listen({ port, host: '127.0.0.1' });
    base = `http://127.0.0.1:${port}`;
    ws = await newWorkspace(t);
    for (let i = 1; i <= GATEWAYS; i++) await invoke(t, 'rest', ws.token, 'create_gateway', { name: `gw-${i}` });
    longGuid = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: LONG })).body.guid;
    await registerServer(t, ws, { name: 'Everything', url: everything.url, authType: 'none' });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await everything?.close();
  });

  it('opens a gateway from the bottom of a long list in view, focused on its name; Escape closes it back to its link', async () => {
    const p = await signedIn(1280, '#/gateways');
    const link = p.getByRole('link', { name: 'gw-7', exact: true });
    await link.focus();
    await p.keyboard.press('Enter');
    const heading = p.getByRole('heading', { name: 'gw-7', level: 2 });
    await expect.poll(() => heading.count()).toBe(1);
    await expect.poll(() => isFocused(heading)).toBe(true);
    expect(await inView(heading)).toBe(true);
    await p.keyboard.press('Escape');
    await expect.poll(() => heading.count()).toBe(0);
    await expect.poll(() => isFocused(link)).toBe(true);
    await p.close();
  });

  it('opens a host focused on its name; Escape closes it back to its link', async () => {
    await invoke(t, 'rest', ws.token, 'create_host', { name: 'Desk app' });
    const p = await signedIn(1280, '#/hosts');
    const link = p.getByRole('link', { name: 'Desk app', exact: true });
    await link.focus();
    await p.keyboard.press('Enter');
    const heading = p.getByRole('heading', { name: 'Desk app', level: 2 });
    await expect.poll(() => isFocused(heading)).toBe(true);
    await p.keyboard.press('Escape');
    await expect.poll(() => heading.count()).toBe(0);
    await expect.poll(() => isFocused(link)).toBe(true);
    await p.close();
  });

  it("opens a server's identities focused on their heading; Escape closes them back to the server's button", async () => {
    const p = await signedIn(1280, '#/servers');
    const button = p.getByRole('button', { name: 'Everything', exact: true });
    await button.focus();
    await p.keyboard.press('Enter');
    const heading = p.getByRole('heading', { name: 'Identities of Everything' });
    await expect.poll(() => isFocused(heading)).toBe(true);
    await p.keyboard.press('Escape');
    await expect.poll(() => heading.count()).toBe(0);
    await expect.poll(() => isFocused(button)).toBe(true);
    await p.close();
  });

  it('an Escape that cancels an editor inside a gateway closes the editor only', async () => {
    const p = await signedIn(1280, `#/gateways?open=${longGuid}`);
    const rename = p.getByRole('button', { name: `Rename ${LONG}` });
    await rename.click();
    // The Escape is the editor's once it holds the focus (it takes it as it opens); before that it would be the panel's.
    await expect.poll(() => isFocused(p.getByLabel(`New name for ${LONG}`))).toBe(true);
    await p.keyboard.press('Escape');
    await expect.poll(() => isFocused(rename)).toBe(true);
    expect(await p.getByRole('button', { name: 'Close gateway' }).count()).toBe(1);
    await p.close();
  });

  it('a gateway with a long name without spaces, opened at 375 px, does not scroll the page sideways', async () => {
    const p = await signedIn(375, `#/gateways?open=${longGuid}`);
    await p.getByRole('button', { name: `Rename ${LONG}` }).waitFor();
    expect(await p.evaluate('document.scrollingElement.scrollWidth <= innerWidth')).toBe(true);
    await p.close();
  });

  it("shows the gateways' Connect URLs at 375 px each on one line, the table scrolling in its box, not the page", async () => {
    const p = await signedIn(375, '#/gateways');
    const row = p.getByRole('table', { name: 'Gateways' }).getByRole('row', { name: /^gw-7 / });
    const url = row.locator('code');
    await url.waitFor();
    expect(await url.evaluate((e) => e.getClientRects().length)).toBe(1);
    expect((await row.boundingBox())!.height).toBeLessThan(80);
    expect(await p.evaluate('document.scrollingElement.scrollWidth <= innerWidth')).toBe(true);
    await p.close();
  });

  it('archiving a gateway puts the focus on "Unarchive gateway", which undoes it', async () => {
    const p = await signedIn(1280, '#/gateways');
    await p.getByRole('link', { name: 'gw-3', exact: true }).click();
    await p.getByRole('button', { name: 'Archive gateway' }).click();
    await p.getByRole('button', { name: 'Yes, Archive gateway' }).click();
    const unarchive = p.getByRole('button', { name: 'Unarchive gateway' });
    await unarchive.waitFor();
    await expect.poll(() => isFocused(unarchive)).toBe(true);
    await p.close();
  });
});
