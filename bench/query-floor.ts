import type { ClickhouseStore } from '../src/stores/clickhouse.js';
import { timeRuns } from './stats.js';

/**
 * What any query costs this hour, measured in the run it explains: `SELECT 1` through
 * the store's client (the client and chDB's per-statement work), and a count of one
 * minute of the workspace's call_logs rows (a real table: planning, the parts' index
 * analysis, a granule or two read). Every report and page pays at least the second
 * once per table it reads, so a shape's p50 is read against it: on this shared machine
 * it moves from one hour to the next (docs/call-logs.md, "Session 41").
 */
export async function queryFloor(store: Pick<ClickhouseStore, 'client'>, org: string, newestMs: number, runs: number): Promise<string> {
  let run = 0;
  const select1 = await timeRuns(async () => (await store.client.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json(), runs);
  // Each run a minute a second earlier, so no run is answered from the query condition cache.
  const minute = await timeRuns(async () => {
    const toMs = newestMs - 1000 * run++;
    const query = `SELECT count() AS n FROM call_logs WHERE organization_guid = {org:String}
      AND created_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND created_at <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')`;
    return (await store.client.query({ query, query_params: { org, from: toMs - 60_000, to: toMs }, format: 'JSONEachRow' })).json();
  }, runs);
  return `query floor this run, p50 / p99 ms: SELECT 1 ${select1.p50.toFixed(1)} / ${select1.p99.toFixed(1)}, a minute of call_logs counted ${minute.p50.toFixed(1)} / ${minute.p99.toFixed(1)}`;
}
