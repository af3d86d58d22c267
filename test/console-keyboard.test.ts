import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumInstalled, launchChromium } from './helpers/chromium.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';
import { ingest, logRow } from './helpers/call-logs.js';

/** The console from the keyboard alone: where the focus is after each step a person takes. */
const run = chromiumInstalled() && storeKind() === 'pglite';

let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let browser: Browser;
let page: Page;

const focused = () => page.evaluate('({ tag: document.activeElement?.tagName, text: document.activeElement?.textContent?.trim() })');

describe.runIf(run)('the console from the keyboard', () => {
  beforeAll(async () => {
    const port = await freePort();
    t = await startTestApp({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    await t.app.listen({ port, host: '127.0.0.1' });
    base = `http://127.0.0.1:${port}`;
    ws = await newWorkspace(t);
    // Two pages of calls and a few more (the Logs page reads 50 at a time).
    const now = Date.now();
    await ingest(
      t,
      Array.from({ length: 60 }, (_, i) => logRow(ws.organizationGuid, { createdAt: now - i * 60_000 })),
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it("the sign-in box has the focus as the page opens; signing in with Enter puts the focus on the page's heading, not on <body>", async () => {
    await page.goto(`${base}/console/#/gateways`);
    // The sign-in page opens with the focus in its one box: the token can be typed at once.
    const box = page.getByLabel('Access token');
    await expect.poll(() => box.evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.type(ws.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Gateways', level: 1 }).waitFor();
    await expect.poll(focused).toEqual({ tag: 'H1', text: 'Gateways' });
  });

  it('paging to the first or last page, whose button is then disabled, leaves the focus on the other button', async () => {
    await page.goto(`${base}/console/#/logs`);
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    const next = page.getByRole('button', { name: 'Next page' });
    const previous = page.getByRole('button', { name: 'Previous page' });
    await next.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Calls 51–60' }).waitFor();
    await expect.poll(focused).toEqual({ tag: 'BUTTON', text: 'Previous page' });
    expect(await previous.evaluate((e) => e === e.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Calls 1–50' }).waitFor();
    await expect.poll(focused).toEqual({ tag: 'BUTTON', text: 'Next page' });
  });

  it("says a field's hint with its label (the hint describes the control)", async () => {
    await page.goto(`${base}/console/#/settings`);
    const days = page.getByLabel('Expires in days');
    const described = await days.evaluate((e) => e.ownerDocument.getElementById(e.getAttribute('aria-describedby') ?? '')?.textContent);
    expect(described).toBe('0 never expires; empty is 90');
  });
});
