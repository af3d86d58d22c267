import type { Browser, Page } from 'playwright-core';
import type { CreatedWorkspace } from '../../src/core/workspaces.js';
import { launchChromium } from './chromium.js';
import { newWorkspace, startTestApp, type TestApp } from './harness.js';
import { freePort } from './ports.js';

/** The service listening on loopback (PUBLIC_BASE_URL its own address, as a browser sees it), a new workspace, and Chromium. */
export interface ConsoleApp {
  t: TestApp;
  base: string;
  ws: CreatedWorkspace;
  browser: Browser;
}

export async function startConsoleApp(): Promise<ConsoleApp> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ PUBLIC_BASE_URL: base });
  await t.app.listen({ port, host: '127.0.0.1' });
  const ws = await newWorkspace(t);
  return { t, base, ws, browser: await launchChromium() };
}

/** A page `width` x 800 that opens the console at `hash` (`#/settings`) and signs in with `token` there. */
export async function signedInPage(app: ConsoleApp, hash: string, token: string, width = 1280): Promise<Page> {
  const page = await app.browser.newPage({ viewport: { width, height: 800 } });
  page.setDefaultTimeout(20_000);
  await page.goto(`${app.base}/console/${hash}`);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

export async function stopConsoleApp(app: ConsoleApp | undefined): Promise<void> {
  await app?.browser.close();
  await app?.t.close();
}
