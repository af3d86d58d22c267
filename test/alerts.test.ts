import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import type { NewAlert } from '../src/core/alerts.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
let org: string;
let token: string;
let otherToken: string;
const server = newGuid();
const gateway = newGuid();
const secret = 'ghp_' + newGuid().replaceAll('-', '');
/** When each raise started and finished: an alert's created_at lies between the two. */
const raisedAt: number[] = [];
const doneAt: number[] = [];

const alert = (i: number, over: Partial<NewAlert> = {}): NewAlert => ({
  organizationGuid: org,
  code: i % 3 === 0 ? 'server_validation_failed' : 'upstream_call_failed',
  messageType: i % 3 === 0 ? 'warning' : 'error',
  subject: `Subject ${i}`,
  message: `Message ${i}`,
  relatedResourceIds: i % 2 === 0 ? [server] : [gateway, newGuid()],
  ...over,
});

beforeAll(async () => {
  t = await startTestApp();
  const ws = await newWorkspace(t);
  org = ws.organizationGuid;
  token = ws.token;
  const other = await newWorkspace(t);
  otherToken = other.token;
  for (let i = 0; i < 12; i++) {
    raisedAt.push(Date.now());
    await t.runtime.services.alerts.raise(alert(i));
    doneAt.push(Date.now());
    // The next alert starts in a later millisecond: "newest first" and time windows are observable.
    while (Date.now() <= doneAt.at(-1)!) await new Promise((r) => setImmediate(r));
  }
  await t.runtime.services.alerts.raise({
    ...alert(99),
    code: 'upstream_auth_failed',
    dynamicContent: { subject: 'Auth to {server} failed', message: '{status} from upstream', values: { server, status: '401' } },
    debugContext: {
      status: 401,
      headers: { authorization: `Bearer ${secret}`, 'www-authenticate': 'Bearer realm="x"' },
      body: `rejected token Bearer ${secret}`,
      engine: { attempt: 2 },
    },
    relatedContext: { serverName: 'Docs' },
  });
  // The other workspace has an alert naming the same server.
  await t.runtime.services.alerts.raise({ ...alert(0), organizationGuid: other.organizationGuid, subject: 'foreign' });
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

describe.each(SURFACES)('list_alerts and get_alert on %s', (surface) => {
  it('lists newest first with the row fields and default paging', async () => {
    const res = await invoke(t, surface, token, 'list_alerts', {});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ skip: 0, take: 50, nextSkip: null });
    expect(res.body.items).toHaveLength(13);
    expect(res.body.items[0].code).toBe('upstream_auth_failed');
    expect(res.body.items.slice(1).map((a: any) => a.subject)).toEqual(Array.from({ length: 12 }, (_, i) => `Subject ${11 - i}`));
    expect(Object.keys(res.body.items[0]).sort()).toEqual(['code', 'createdAt', 'guid', 'message', 'messageType', 'relatedResourceIds', 'subject']);
    expect(res.body.items[0].createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('filters by code, messageType and any related resource, and by time', async () => {
    const byCode = await invoke(t, surface, token, 'list_alerts', { filters: { code: 'server_validation_failed' } });
    expect(byCode.body.items.map((a: any) => a.subject)).toEqual(['Subject 9', 'Subject 6', 'Subject 3', 'Subject 0']);
    const byType = await invoke(t, surface, token, 'list_alerts', { filters: { messageType: 'warning' } });
    expect(byType.body.items.every((a: any) => a.messageType === 'warning')).toBe(true);
    expect(byType.body.items).toHaveLength(5); // 0, 3, 6, 9 and the auth alert (99)
    const byGateway = await invoke(t, surface, token, 'list_alerts', { filters: { relatedResourceGuid: gateway } });
    expect(byGateway.body.items.every((a: any) => a.relatedResourceIds.includes(gateway))).toBe(true);
    expect(byGateway.body.items).toHaveLength(7); // the six odd ones and the auth alert (99)
    const byServer = await invoke(t, surface, token, 'list_alerts', {
      filters: { relatedResourceGuid: server, code: 'upstream_call_failed', messageType: 'error' },
    });
    expect(byServer.body.items.map((a: any) => a.subject)).toEqual(['Subject 10', 'Subject 8', 'Subject 4', 'Subject 2']);
    const window = await invoke(t, surface, token, 'list_alerts', { fromMs: raisedAt[3], toMs: doneAt[5] });
    expect(window.body.items.map((a: any) => a.subject)).toEqual(['Subject 5', 'Subject 4', 'Subject 3']);
  });

  it('pages with skip and take, caps take at 250 and refuses bad input', async () => {
    const page = await invoke(t, surface, token, 'list_alerts', { skip: 10, take: 2 });
    expect(page.body).toMatchObject({ skip: 10, take: 2, nextSkip: 12 });
    expect(page.body.items.map((a: any) => a.subject)).toEqual(['Subject 2', 'Subject 1']);
    const last = await invoke(t, surface, token, 'list_alerts', { skip: 12, take: 2 });
    expect(last.body.nextSkip).toBeNull();
    expect(last.body.items).toHaveLength(1);
    expect((await invoke(t, surface, token, 'list_alerts', { take: 1000 })).body.take).toBe(250);
    for (const [input, path] of [
      [{ take: 0 }, 'take'],
      [{ filters: { messageType: 'fatal' } }, 'filters.messageType'],
      [{ filters: { severity: 'x' } }, 'filters.severity'],
      [{ fromMs: 5, toMs: 4 }, 'fromMs'],
    ] as const) {
      const res = await invoke(t, surface, token, 'list_alerts', input);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
  });

  it('returns the full record with debugContext redacted', async () => {
    const [latest] = (await invoke(t, surface, token, 'list_alerts', { take: 1 })).body.items;
    const res = await invoke(t, surface, token, 'get_alert', { alertGuid: latest.guid });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      guid: latest.guid,
      code: 'upstream_auth_failed',
      dynamicContent: { subject: 'Auth to {server} failed', values: { status: '401' } },
      relatedContext: { serverName: 'Docs' },
      closeDetails: null,
      debugContext: { status: 401, headers: { authorization: '[REDACTED]' }, engine: { attempt: 2 } },
    });
    assertNeverLeaked(t, [secret], [res.body]);
  });

  it("keeps workspaces apart: another workspace's alerts are neither listed nor readable", async () => {
    const mine = await invoke(t, surface, token, 'list_alerts', { take: 250 });
    expect(mine.body.items.some((a: any) => a.subject === 'foreign')).toBe(false);
    const theirs = await invoke(t, surface, otherToken, 'list_alerts', { filters: { relatedResourceGuid: server } });
    expect(theirs.body.items.map((a: any) => a.subject)).toEqual(['foreign']);
    const res = await invoke(t, surface, otherToken, 'get_alert', { alertGuid: mine.body.items[0].guid });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect((await invoke(t, surface, token, 'get_alert', { alertGuid: newGuid() })).status).toBe(404);
  });
});

describe('alert capability', () => {
  it('needs seeAllAlerts', async () => {
    const ws = await newWorkspace(t);
    const reader = await newMember(t, ws, ['seeAllAlerts']);
    const logsOnly = await newMember(t, ws, ['exportLogs']);
    expect((await invoke(t, 'rest', reader.token, 'list_alerts', {})).status).toBe(200);
    expect((await invoke(t, 'rest', logsOnly.token, 'list_alerts', {})).body.code).toBe('missing_capability');
  });
});
