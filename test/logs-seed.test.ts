import { describe, expect, it } from 'vitest';
import { runAdminCommand } from '../src/core/admin-commands.js';
import { newGuid } from '../src/core/ids.js';
import { seedCallLogs } from '../src/core/logs/seed.js';
import { invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { countRows } from './helpers/call-logs.js';
import { threadNames, threadsAtNice } from './helpers/threads.js';
import { WRITE_NICE } from '../src/stores/clickhouse.js';

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

  it('shapes the traffic like real traffic: a few tools carry most calls, long tails, business hours, error bursts, fixed teams and connections', async () => {
    const ws = await newWorkspace(t);
    const days = 7; // a whole week: every weekday hour and a weekend are in the window
    await runAdminCommand(t.runtime.services, 'seed-logs', { org: ws.organizationGuid, rows: 60_000, days, users: 40 });
    const report = async (body: Record<string, unknown>) => {
      const res = await invoke(t, 'rest', ws.token, 'get_usage_report', {
        fromMs: Date.now() - (days + 1) * 86_400_000,
        toMs: Date.now(),
        take: 10_000,
        ...body,
      });
      expect(res.status).toBe(200);
      return res.body as { items: Record<string, any>[]; totals: Record<string, number> };
    };

    // A few tools carry most tool calls (Zipf-like).
    const byTool = (await report({ groupBy: ['tool_name'], filters: { type: 'tool_call' } })).items;
    const toolCalls = byTool.reduce((sum, i) => sum + i.calls, 0);
    expect(byTool.length).toBeGreaterThanOrEqual(10);
    expect(byTool.slice(0, 3).reduce((sum, i) => sum + i.calls, 0) / toolCalls).toBeGreaterThan(0.5);
    expect(byTool.at(-1)!.calls * 10).toBeLessThan(byTool[0]!.calls);
    // Likewise servers: the busiest server has more calls than the two least busy together.
    const byServer = (await report({ groupBy: ['inbound_server_guid'], filters: { type: 'tool_call' } })).items;
    expect(byServer[0]!.calls).toBeGreaterThan(byServer.at(-1)!.calls + byServer.at(-2)!.calls);

    // Durations are long-tailed, with a median of each tool's own.
    const busy = byTool.filter((i) => i.calls >= 500);
    for (const tool of busy) expect(tool.p99Ms / tool.p50Ms, tool.tool_name).toBeGreaterThan(2);
    expect(Math.max(...busy.map((i) => i.p99Ms / i.p50Ms))).toBeGreaterThan(5);
    const medians = busy.map((i) => i.p50Ms);
    expect(Math.max(...medians) / Math.min(...medians)).toBeGreaterThan(5);

    // Weekday business hours (UTC) are busier than weekday nights.
    const hourly = (await report({ interval: 'hour' })).items;
    const weekdayCallsAt = (utcHour: number) =>
      hourly
        .filter((i) => new Date(i.bucket).getUTCHours() === utcHour && ![0, 6].includes(new Date(i.bucket).getUTCDay()))
        .reduce((sum, i) => sum + i.calls, 0);
    expect(weekdayCallsAt(14)).toBeGreaterThan(3 * weekdayCallsAt(3));

    // The error rate varies by hour: some hours hold a burst of errors, on one server.
    const byRate = hourly.filter((i) => i.calls >= 20).sort((a, b) => b.errors / b.calls - a.errors / a.calls);
    const worst = byRate[0]!;
    const median = byRate[Math.floor(byRate.length / 2)]!;
    expect(worst.errors / worst.calls).toBeGreaterThan(3 * (median.errors / median.calls));
    const worstHour = Date.parse(worst.bucket);
    const worstByServer = (await report({ fromMs: worstHour, toMs: worstHour + 3_599_999, groupBy: ['inbound_server_guid'], filters: { status: 'error' } }))
      .items;
    expect(worstByServer[0]!.calls / worst.errors).toBeGreaterThan(0.5);

    // A user belongs to one team and works from one host; a user and a gateway imply one connection.
    const byUser = (await report({ groupBy: ['user_guid', 'team_guid', 'host_guid'] })).items;
    expect(new Set(byUser.map((i) => i.user_guid)).size).toBe(byUser.length);
    expect(byUser.length).toBe(40);
    const byUserGateway = (await report({ groupBy: ['user_guid', 'outbound_gateway_guid', 'gateway_connection_guid'] })).items;
    expect(new Set(byUserGateway.map((i) => `${i.user_guid} ${i.outbound_gateway_guid}`)).size).toBe(byUserGateway.length);
    // A few users carry most calls too.
    expect(byUser.slice(0, 8).reduce((sum, i) => sum + i.calls, 0) / 60_000).toBeGreaterThan(0.5);
  });

  it('paces its rows when asked (a steady producer, as a gateway is) and stops when its signal aborts, keeping what it wrote', async () => {
    const ws = await newWorkspace(t);
    const progress: { done: number; at: number }[] = [];
    const started = performance.now();
    // 1,500 rows at 5,000 a second: chunks of 100, each due 20 ms after the one before.
    const paced = await seedCallLogs(t.runtime.services, {
      organizationGuid: ws.organizationGuid,
      rows: 1_500,
      days: 1,
      rowsPerSecond: 5_000,
      onProgress: (done) => progress.push({ done, at: performance.now() }),
    });
    expect(paced.rows).toBe(1_500);
    expect(progress.map((p) => p.done)).toEqual(Array.from({ length: 15 }, (_, i) => (i + 1) * 100));
    // Never ahead of its rate (a slow machine only makes it later): the 15th chunk waited for the 14 before it.
    expect(progress.at(-1)!.at - started).toBeGreaterThanOrEqual(14 * 20 - 1);
    expect(await countRows(t, ws.organizationGuid)).toBe(1_500);

    const other = await newWorkspace(t);
    const stop = new AbortController();
    const stopped = await seedCallLogs(t.runtime.services, {
      organizationGuid: other.organizationGuid,
      rows: 100_000,
      days: 1,
      rowsPerSecond: 5_000,
      signal: stop.signal,
      onProgress: (done) => done >= 300 && stop.abort(),
    });
    expect(stopped.rows).toBe(300);
    expect(await countRows(t, other.organizationGuid)).toBe(300);
  });

  it('makes its rows on a thread of its own at WRITE_NICE, below the requests it runs beside, and ends it', async (ctx) => {
    if (process.platform !== 'linux') ctx.skip();
    const ws = await newWorkspace(t);
    const seen = new Set<string>();
    const sampler = setInterval(() => threadsAtNice(WRITE_NICE).forEach((name) => seen.add(name)), 2);
    try {
      await seedCallLogs(t.runtime.services, { organizationGuid: ws.organizationGuid, rows: 40_000, days: 1 });
    } finally {
      clearInterval(sampler);
    }
    expect(seen).toContain('call-log-seed');
    expect(await countRows(t, ws.organizationGuid)).toBe(40_000);
    expect(threadNames()).not.toContain('call-log-seed');
  });

  it('refuses an unknown workspace and bad counts', async () => {
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: newGuid(), rows: 10 })).rejects.toMatchObject({ code: 'not_found' });
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: newGuid(), rows: 0 })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(runAdminCommand(t.runtime.services, 'seed-logs', { org: 'x', rows: 5 })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
