import type { ClickHouseClient } from '@clickhouse/client';

/**
 * Waits (up to a minute) until ClickHouse runs no merge and no mutation. The benches
 * count the CPU of the whole process, chDB's background threads included: a merge of
 * rows just written, or a projection being built, is not part of what they measure.
 */
export async function waitForMergesToSettle(client: ClickHouseClient): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const res = await client.query({
      query: 'SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.mutations WHERE NOT is_done) AS busy',
      format: 'JSONEachRow',
    });
    if (Number((await res.json<{ busy: string | number }>())[0]!.busy) === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}
