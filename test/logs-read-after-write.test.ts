import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { countRows, logRow } from './helpers/call-logs.js';

let t: TestApp;
let org: string;
let token: string;

beforeAll(async () => {
  t = await startTestApp();
  const ws = await newWorkspace(t);
  org = ws.organizationGuid;
  token = ws.token;
});

afterAll(async () => {
  await closeClients();
  await t.close();
});

/** Rows of this minute written through the app's writer, not flushed: a trickle of calls. */
async function writeCalls(n: number): Promise<string[]> {
  const rows = Array.from({ length: n }, () => logRow(org, { guid: newGuid(), createdAt: Date.now() }));
  await t.runtime.services.callLogs.write(rows);
  return rows.map((row) => row.guid!);
}

describe('a read sees the calls written just before it', () => {
  it.each(SURFACES)('query_logs and get_usage_report on %s', async (surface) => {
    const before = await countRows(t, org);
    const guids = await writeCalls(2);
    // Without a read the rows wait for their segment's interval (10 s on the embedded store, 1 s on a server).
    expect(await countRows(t, org)).toBe(before);
    const page = await invoke(t, surface, token, 'query_logs', { fromMs: Date.now() - 60_000 });
    expect(page.status).toBe(200);
    const listed = (page.body as { items: { guid: string }[] }).items.map((item) => item.guid);
    expect(listed).toEqual(expect.arrayContaining(guids));

    await writeCalls(3);
    const report = await invoke(t, surface, token, 'get_usage_report', { fromMs: Date.now() - 60_000 });
    expect(report.status).toBe(200);
    expect((report.body as { totals: { calls: number } }).totals.calls).toBe(before + 5);
  });
});
