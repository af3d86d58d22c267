import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import { copyStoreTemplate, storeKind } from './helpers/harness.js';
import { initialAdminToken, scratchDataDir, startService, stopService } from './helpers/service-process.js';
import { freePort } from './helpers/ports.js';

/**
 * The audit log's durability promise (contract 8.4): an operation is answered only
 * once its record is in the spool, so a `kill -9` in the middle of a burst loses no
 * record of an answered operation, and the replay at the next start inserts each
 * exactly once.
 */
const dataDir = scratchDataDir('mcpgw-audit-kill-');
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Bounds of the burst: at most this many operations, this many at a time; the process dies after KILL_AFTER answers. */
const BURST_MAX = 400;
const CONCURRENCY = 8;
const KILL_AFTER = 80;

interface Answered {
  operation: 'create_team' | 'delete_team';
  targetGuid: string;
  status: number;
}

describe.runIf(storeKind() === 'pglite')('audit records survive kill -9', () => {
  it('every answered operation of a burst has exactly one record after the restart', async () => {
    const port = await freePort();
    // Migrated stores to start on (a first start on empty ones is process.test's): the bootstrap runs all the same.
    copyStoreTemplate(dataDir(), 'pg');
    copyStoreTemplate(dataDir(), 'clickhouse');
    const first = await startService(dataDir(), port, children);
    const token = initialAdminToken(first.output());
    expect(token).toMatch(/^svcp_/);
    const api = `http://127.0.0.1:${port}/api/v1/svc-admin`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

    // Two kinds of operation that change something: a creation that succeeds (201) and
    // a deletion of an unknown team that is refused (404). Both owe a record.
    const answered: Answered[] = [];
    let started = 0;
    let killed = false;
    const one = async (i: number): Promise<void> => {
      if (i % 4 === 3) {
        const guid = newGuid();
        const res = await fetch(`${api}/teams/${guid}`, { method: 'DELETE', headers: { authorization: headers.authorization } });
        await res.arrayBuffer();
        answered.push({ operation: 'delete_team', targetGuid: guid, status: res.status });
      } else {
        const res = await fetch(`${api}/teams`, { method: 'POST', headers, body: JSON.stringify({ name: `burst-${i}` }) });
        const body = (await res.json()) as { guid: string };
        expect(res.status, JSON.stringify(body)).toBe(201);
        answered.push({ operation: 'create_team', targetGuid: body.guid, status: res.status });
      }
    };
    let unanswered = 0;
    const worker = async (): Promise<void> => {
      while (!killed && started < BURST_MAX) {
        try {
          await one(started++);
        } catch (err) {
          // Only the kill may cut a request short.
          if (!killed) throw err;
          unanswered++;
          return;
        }
        if (!killed && answered.length >= KILL_AFTER) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    await stopService(first.child);
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(killed).toBe(true);
    expect(answered.length).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(answered.length + unanswered).toBeLessThanOrEqual(BURST_MAX);

    // The restart replays the spool; query_audit_log flushes it before reading.
    const second = await startService(dataDir(), port, children);
    const res = await fetch(`${api}/audit/query`, { method: 'POST', headers, body: JSON.stringify({ filters: { surface: 'rest' }, take: 1000 }) });
    const page = (await res.json()) as { items: { operation: string; target_guids: string[]; outcome: string; status: number }[] };
    expect(res.status, JSON.stringify(page)).toBe(200);
    const records = page.items.filter((r) => r.operation === 'create_team' || r.operation === 'delete_team');

    for (const op of answered) {
      const mine = records.filter((r) => r.operation === op.operation && r.target_guids.includes(op.targetGuid));
      expect(mine, `${op.operation} ${op.targetGuid}`).toHaveLength(1);
      expect(mine[0]).toMatchObject({ status: op.status, outcome: op.status === 201 ? 'ok' : 'not_found' });
    }
    // A request the kill cut short may or may not have its record, but no record is inserted twice by the replay.
    const keys = records.map((r) => `${r.operation} ${[...r.target_guids].sort().join(',')}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(records.length).toBeLessThanOrEqual(answered.length + unanswered);

    expect(await stopService(second.child)).toBe(0);
  }, 240_000);
});
