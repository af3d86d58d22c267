import type { ClickHouseClient } from '@clickhouse/client';

/**
 * Waits (up to `maxSeconds`, a minute unless told) until ClickHouse runs no merge and no
 * mutation. The benches count the CPU of the whole process, chDB's background threads
 * included: a merge of rows just written, or a projection being built, is not part of
 * what they measure. Returns how long it waited and whether the store settled.
 */
export async function waitForMergesToSettle(client: ClickHouseClient, maxSeconds = 60): Promise<{ seconds: number; settled: boolean }> {
  const started = performance.now();
  for (;;) {
    const res = await client.query({
      query: 'SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.mutations WHERE NOT is_done) AS busy',
      format: 'JSONEachRow',
    });
    const seconds = (performance.now() - started) / 1000;
    if (Number((await res.json<{ busy: string | number }>())[0]!.busy) === 0) return { seconds, settled: true };
    if (seconds > maxSeconds) return { seconds, settled: false };
    await new Promise((r) => setTimeout(r, 100));
  }
}
