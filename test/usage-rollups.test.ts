import { describe, expect, it } from 'vitest';
import { cutWindow, servingRollups, USAGE_ROLLUPS, type WindowPart } from '../src/core/logs/usage-rollups.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const D0 = Date.UTC(2026, 10, 1);
const table = (p: WindowPart) => (p.from === 'raw' ? 'raw' : p.from.table);

describe('which usage rollups serve a report', () => {
  it('no keys: one rollup a grain, coarsest first, the smallest of each grain (the totals)', () => {
    expect(servingRollups([], undefined).map((r) => r.table)).toEqual(['call_log_usage_daily_totals', 'call_log_usage_hourly_totals', 'call_log_usage_minute']);
  });

  it('people by week only for the reports by person: a report without keys reads the totals', () => {
    expect(servingRollups([], undefined).map((r) => r.table)).not.toContain('call_log_usage_weekly_people');
    expect(servingRollups(['team_guid'], undefined)[0]!.table).toBe('call_log_usage_weekly_people');
  });

  it('never coarser than the buckets', () => {
    expect(servingRollups([], 'hour').map((r) => r.table)).toEqual(['call_log_usage_hourly_totals', 'call_log_usage_minute']);
    expect(servingRollups(['outbound_gateway_guid'], 'minute').map((r) => r.table)).toEqual(['call_log_usage_minute']);
  });

  it('only rollups that keep every key', () => {
    expect(servingRollups(['user_guid'], undefined).map((r) => r.table)).toEqual([
      'call_log_usage_weekly_people',
      'call_log_usage_daily_people',
      'call_log_usage_hourly_people',
    ]);
    expect(servingRollups(['user_guid', 'team_guid'], 'hour').map((r) => r.table)).toEqual(['call_log_usage_hourly_people']);
    expect(servingRollups(['tool_name', 'status'], 'day').map((r) => r.table)).toEqual(['call_log_usage_daily', 'call_log_usage_hourly_tools']);
    // The summaries (clickhouse/0015) serve what they keep: by server or status, by tool name alone.
    expect(servingRollups(['inbound_server_guid', 'status'], undefined).map((r) => r.table)).toEqual([
      'call_log_usage_daily_servers',
      'call_log_usage_hourly_tools',
    ]);
    expect(servingRollups(['tool_name'], 'hour').map((r) => r.table)).toEqual(['call_log_usage_hourly_tool_names']);
    expect(servingRollups(['inbound_server_guid', 'tool_name'], 'hour').map((r) => r.table)).toEqual(['call_log_usage_hourly_tools']);
    // The hourly rollup without the gateway serves whatever does not need the gateway; the one with it, the rest.
    expect(servingRollups(['outbound_gateway_guid', 'tool_name'], undefined).map((r) => r.table)).toEqual(['call_log_usage_daily', 'call_log_usage_hourly']);
    expect(servingRollups(['user_guid', 'tool_name'], undefined)).toEqual([]);
    expect(servingRollups(['trace_id'], undefined)).toEqual([]);
  });

  it('declares each table once', () => {
    expect(new Set(USAGE_ROLLUPS.map((r) => r.table)).size).toBe(USAGE_ROLLUPS.length);
  });
});

describe('cutting a window into parts', () => {
  const every = servingRollups([], undefined);

  it('whole days in the middle, then whole hours, whole minutes and the raw rest at each end, covering every millisecond once', () => {
    const from = D0 + 5 * HOUR + 17 * MIN + 12_345;
    const to = D0 + 3 * DAY + 2 * HOUR + 3 * MIN + 999;
    const parts = cutWindow(from, to, every);
    expect(parts.map((p) => [table(p), p.fromMs - D0, p.toMs - D0])).toEqual([
      ['raw', 5 * HOUR + 17 * MIN + 12_345, 5 * HOUR + 18 * MIN - 1],
      ['call_log_usage_minute', 5 * HOUR + 18 * MIN, 6 * HOUR - 1],
      ['call_log_usage_hourly_totals', 6 * HOUR, DAY - 1],
      ['call_log_usage_daily_totals', DAY, 3 * DAY - 1],
      ['call_log_usage_hourly_totals', 3 * DAY, 3 * DAY + 2 * HOUR - 1],
      ['call_log_usage_minute', 3 * DAY + 2 * HOUR, 3 * DAY + 2 * HOUR + 3 * MIN - 1],
      ['raw', 3 * DAY + 2 * HOUR + 3 * MIN, 3 * DAY + 2 * HOUR + 3 * MIN + 999],
    ]);
    parts.slice(1).forEach((p, i) => expect(p.fromMs).toBe(parts[i]!.toMs + 1));
  });

  it('a window shorter than every grain is read raw; aligned windows need no raw part', () => {
    expect(cutWindow(D0 + 1000, D0 + 50_000, every).map(table)).toEqual(['raw']);
    expect(cutWindow(D0, D0 + 2 * DAY - 1, every).map(table)).toEqual(['call_log_usage_daily_totals']);
    expect(cutWindow(D0, D0 + 2 * DAY, every).map(table)).toEqual(['call_log_usage_daily_totals', 'raw']);
  });

  it('by person: partial days from the hourly people rollup; with no finer rollup, the partial hours are read raw', () => {
    const people = servingRollups(['user_guid'], undefined);
    expect(cutWindow(D0 + HOUR + MIN, D0 + 3 * DAY + HOUR + MIN, people).map(table)).toEqual([
      'raw',
      'call_log_usage_hourly_people',
      'call_log_usage_daily_people',
      'call_log_usage_hourly_people',
      'raw',
    ]);
  });

  it('by person over weeks: whole weeks from the epoch (Thursdays) in the middle, whole days around them', () => {
    const people = servingRollups(['user_guid'], undefined);
    expect(people.map((r) => r.table)).toEqual(['call_log_usage_weekly_people', 'call_log_usage_daily_people', 'call_log_usage_hourly_people']);
    // D0 (2026-11-01) is a Sunday: the first week in the window starts on Thursday the 5th.
    const firstWeek = Date.UTC(2026, 10, 5);
    expect(new Date(firstWeek).getUTCDay()).toBe(4);
    const parts = cutWindow(D0, D0 + 30 * DAY - 1, people);
    expect(parts.map((p) => [table(p), p.fromMs - D0, p.toMs - D0])).toEqual([
      ['call_log_usage_daily_people', 0, firstWeek - D0 - 1],
      ['call_log_usage_weekly_people', firstWeek - D0, firstWeek - D0 + 21 * DAY - 1],
      ['call_log_usage_daily_people', firstWeek - D0 + 21 * DAY, 30 * DAY - 1],
    ]);
    // Day buckets are never read from weeks.
    expect(servingRollups(['user_guid'], 'day').map((r) => r.table)).toEqual(['call_log_usage_daily_people', 'call_log_usage_hourly_people']);
  });
});
