import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page, Route } from 'playwright-core';
import { chromiumInstalled } from './helpers/chromium.js';
import { signedInPage, startConsoleApp, stopConsoleApp, type ConsoleApp } from './helpers/console-app.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, storeKind, type TestApp } from './helpers/harness.js';

/** The console's forms: a refused input's errors tied to their fields; the reload after a save does not undo what was typed since. */
const run = chromiumInstalled() && storeKind() === 'pglite';

let app: ConsoleApp;
let t: TestApp;
let base: string;
let ws: CreatedWorkspace;
let page: Page;

/** The texts of the elements a control's aria-describedby names, in order. */
const descriptions = (l: Locator) =>
  l.evaluate((e) =>
    (e.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter(Boolean)
      .map((id: string) => e.ownerDocument.getElementById(id)?.textContent?.trim() ?? null),
  );

describe.runIf(run)("the console's forms", () => {
  beforeAll(async () => {
    app = await startConsoleApp();
    ({ t, base, ws } = app);
    page = await signedInPage(app, '#/settings', ws.token);
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  }, 180_000);

  afterAll(() => stopConsoleApp(app));

  it("marks the field a refusal's error is about invalid, described by its message, until the next submit", async () => {
    const form = page.getByRole('form', { name: 'Create an access token' });
    const label = form.getByLabel('Token label');
    const days = form.getByLabel('Expires in days');
    // Spaces pass the box's `required`; the service refuses them (label: must not be empty).
    await label.fill('   ');
    await form.getByRole('button', { name: 'Create token' }).click();
    await form.getByRole('alert').waitFor();
    expect(await label.getAttribute('aria-invalid')).toBe('true');
    const [said] = await descriptions(label);
    expect(said).toMatch(/label/);
    expect(said).toMatch(/must not be empty/);
    // The other field is not marked, and keeps its hint only.
    expect(await days.getAttribute('aria-invalid')).toBeNull();
    expect(await descriptions(days)).toEqual(['0 never expires; empty is 90']);
    await label.fill('form-errors');
    await form.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('status').filter({ hasText: 'Access token' }).waitFor();
    expect(await label.getAttribute('aria-invalid')).toBeNull();
    expect(await label.getAttribute('aria-describedby')).toBeNull();
  });

  it('describes a field by each of the listed errors about it, after its hint', async () => {
    const form = page.getByRole('form', { name: 'Forward call logs and traces' });
    const headers = form.getByLabel('Collector headers');
    await headers.fill('first line\nsecond line');
    await form.getByRole('button', { name: 'Save collector' }).click();
    await form.getByRole('alert').waitFor();
    expect(await headers.getAttribute('aria-invalid')).toBe('true');
    const said = await descriptions(headers);
    expect(said).toHaveLength(3);
    expect(said[0]).toMatch(/^Sent now/);
    expect(said[1]).toMatch(/^headers: line 1 has no colon/);
    expect(said[2]).toMatch(/^headers: line 2 has no colon/);
    expect(await form.getByLabel('Logs collector URL').getAttribute('aria-invalid')).toBeNull();
    await headers.fill('');
  });

  it('marks a rename box invalid, described by the refusal, as a Field in a Form is', async () => {
    const gw = (await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Renamed in forms' })).body;
    await page.goto(`${base}/console/#/gateways?open=${gw.guid}`);
    await page.getByRole('button', { name: 'Rename Renamed in forms' }).click();
    const box = page.getByLabel('New name for Renamed in forms');
    await box.fill('   ');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.getByRole('form', { name: 'Rename Renamed in forms' }).getByRole('alert').waitFor();
    expect(await box.getAttribute('aria-invalid')).toBe('true');
    const [said] = await descriptions(box);
    expect(said).toMatch(/must not be empty/);
    await page.goto(`${base}/console/#/settings`);
  });

  it('keeps what was ticked after "Save collector", before the configuration is read again', async () => {
    expect(
      (
        await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
          logsCollectorUrl: 'http://127.0.0.1:9/v1/logs',
          headers: { Authorization: 'Bearer forms-collector-secret' },
        })
      ).status,
    ).toBe(200);
    await page.reload();
    const form = page.getByRole('form', { name: 'Forward call logs and traces' });
    const remove = form.getByLabel('Remove the collector headers');
    await remove.waitFor();
    // The configuration read after the save is held until the box is ticked.
    let held: (route: Route) => void = () => undefined;
    const arrived = new Promise<Route>((resolve) => (held = resolve));
    const configuration = (url: URL) => url.pathname.endsWith('/otel-configuration');
    await page.route(configuration, (route) => (route.request().method() === 'GET' ? held(route) : route.continue()));
    const saved = page.waitForResponse((r) => r.url().endsWith('/otel-configuration') && r.request().method() === 'POST');
    await form.getByRole('button', { name: 'Save collector' }).click();
    expect((await saved).status()).toBe(200);
    const reload = await arrived;
    await remove.check();
    // Meanwhile another admin adds a header: the configuration read then says so, which shows when it has arrived.
    expect(
      (
        await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
          logsCollectorUrl: 'http://127.0.0.1:9/v1/logs',
          headers: { Authorization: 'Bearer forms-collector-secret', 'X-Tenant': 'forms' },
        })
      ).status,
    ).toBe(200);
    await reload.continue();
    await page.unroute(configuration);
    await form.getByText(/Sent now: (Authorization, X-Tenant|X-Tenant, Authorization)\./).waitFor();
    expect(await remove.isChecked()).toBe(true);
    await form.getByRole('button', { name: 'Save collector' }).click();
    await expect.poll(async () => (await invoke(t, 'rest', ws.token, 'get_otel_configuration', {})).body.headerNames).toEqual([]);
    // Saved as it was sent: the form shows the stored configuration again.
    await expect.poll(() => remove.count()).toBe(0);
  });
});
