import { describe, expect, it } from 'vitest';
import { runAdminCommand } from '../src/core/admin-commands.js';
import { newGuid } from '../src/core/ids.js';
import { invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { countRows } from './helpers/call-logs.js';

let t: TestApp;
useTestApp((app) => (t = app));

describe('seed-logs', () => {
  it('writes N rows over the last D days through the ingest path, with a few alerts, reporting progress', async () => {
    const ws = await newWorkspace(t);
    const progress: number[] = [];
    const started = Date.now();
    const result = await runAdminCommand(
      t.runtime.services,
      'seed-logs',
      { org: ws.organizationGuid, rows: 12_000, days: 2 },
      { onProgress: (done) => progress.push(done) },
    );
    expect(result.rows).toBe(12_000);
    expect(typeof result.seconds).toBe('number');
    expect(progress.at(-1)).toBe(12_000);
    expect(await countRows(t, ws.organizationGuid)).toBe(12_000);
    const oldest = await invoke(t, 'rest', ws.token, 'query_logs', { orderByDirection: 'asc', take: 1 });
    expect(Date.parse(oldest.body.items[0].created_at)).toBeGreaterThanOrEqual(started - 2 * 86_400_000 - 1000);
    const newest = await invoke(t, 'rest', ws.token, 'query_logs', { take: 1 });
    expect(Date.parse(newest.body.items[0].created_at)).toBeLessThanOrEqual(Date.now());
    // It uses the workspace's real users (the admin exists).
    const mine = await invoke(t, 'rest', ws.token, 'query_logs', { filters: { user_guid: ws.userGuid }, take: 1 });
    expect(mine.body.items).toHaveLength(1);
    const alerts = await invoke(t, 'rest', ws.token, 'list_alerts', {});
    expect(alerts.body.items.length).toBeGreaterThan(0);
    const detail = await invoke(t, 'rest', ws.token, 'query_logs', { includeDetail: true, take: 200 });
    expect(JSON.stringify(detail.body)).not.toContain('seed-not-a-secret');
  });

  it('refuses an unknown workspace and bad counts', async () => {
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: newGuid(), rows: 10 })).rejects.toMatchObject({ code: 'not_found' });
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: newGuid(), rows: 0 })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: 'x', rows: 5 })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
