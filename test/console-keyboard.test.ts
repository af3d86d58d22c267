import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumInstalled, launchChromium } from './helpers/chromium.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { freePort } from './helpers/ports.js';

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
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it("signing in with Enter puts the focus on the page's heading, not on <body>", async () => {
    await page.goto(`${base}/console/#/gateways`);
    await page.getByLabel('Access token').focus();
    await page.keyboard.type(ws.token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Gateways', level: 1 }).waitFor();
    await expect.poll(focused).toEqual({ tag: 'H1', text: 'Gateways' });
  });
});
