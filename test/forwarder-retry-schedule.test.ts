import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { forwarderKit, until } from './helpers/forwarder-kit.js';
import { callLog, writeCallLogs } from './helpers/forwarder-rows.js';

/**
 * When a cursor is tried again.
 *
 * One workspace whose batch cannot even be prepared (here: its collector headers no
 * longer decrypt, as after a SECRET_KEY mix-up) must not disturb the others: before,
 * its error ended the pass while the other workspaces' sends were still on the wire,
 * the next pass claimed those cursors again (same owner) and sent their batches twice.
 */
let t: TestApp;
const kit = forwarderKit({ onStart: (app) => (t = app) });
const { forwarder, otlp } = kit;
const HEADER_SECRET = 'collector-key-6c0e2f9a41';

async function configure(token: string, input: Record<string, unknown>) {
  const res = await invoke(t, 'rest', token, 'set_otel_configuration', input);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  // Call logs only: the audit records of these calls travel to the same collectors.
  await t.runtime.services.db.deleteFrom('forwarder_cursors').where('signal', '=', 'audit').execute();
}
const cursor = (org: string) =>
  t.runtime.services.db.selectFrom('forwarder_cursors').selectAll().where('organization_guid', '=', org).where('signal', '=', 'logs').executeTakeFirstOrThrow();

describe('a workspace whose batch cannot be prepared', () => {
  it("neither ends the pass under another workspace's send (no batch sent twice) nor is retried without backoff", async () => {
    const broken = await newWorkspace(t);
    const healthy = await newWorkspace(t);
    const brokenReceiver = await otlp();
    const r = await otlp();
    await configure(broken.token, { logsCollectorUrl: brokenReceiver.url('/v1/logs'), headers: { 'X-Api-Key': HEADER_SECRET } });
    await configure(healthy.token, { logsCollectorUrl: r.url('/v1/logs') });
    const { db } = t.runtime.services;
    const config = await db
      .selectFrom('collector_configurations')
      .selectAll()
      .where('organization_guid', '=', broken.organizationGuid)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('secrets')
      .set({ ciphertext: randomBytes(48) })
      .where('guid', '=', config.headers_secret_guid!)
      .execute();

    let release!: () => void;
    r.answerNext({ kind: 'hold', until: new Promise<void>((resolve) => (release = resolve)) });
    const written = Array.from({ length: 10 }, () => callLog(healthy.organizationGuid));
    await writeCallLogs(t.runtime.services, [...written, callLog(broken.organizationGuid)]);
    forwarder();
    await until('the healthy batch on the wire', () => r.arrived >= 1);
    // While it is held, a second pass would send it again; give one the time to happen.
    await until('a second copy', () => r.arrived >= 2, 1500).catch(() => undefined);
    release();
    await until('the healthy rows', () => new Set(r.logs.map((l) => String(l.attributes['log.record.uid']))).size >= 10);
    expect(r.logs.map((l) => String(l.attributes['log.record.uid'])).sort()).toEqual(written.map((w) => w.guid).sort());
    expect(r.arrived).toBe(1);

    // The broken workspace is held back with backoff like a failed send, and nothing reaches its collector.
    await until('the broken cursor postponed', async () => (await cursor(broken.organizationGuid)).attempts >= 2);
    const c = await cursor(broken.organizationGuid);
    expect(c.next_attempt_at.getTime()).toBeGreaterThan(new Date(0).getTime());
    expect(c.last_error).toMatch(/could not prepare/);
    expect(brokenReceiver.arrived).toBe(0);
    expect(t.log.text()).not.toContain(HEADER_SECRET);
  });

  it("a saved configuration is tried at once: a new collector does not wait out the old one's Retry-After", async () => {
    const ws = await newWorkspace(t);
    const old = await otlp();
    const fixed = await otlp();
    await configure(ws.token, { logsCollectorUrl: old.url('/v1/logs'), tracesCollectorUrl: old.url('/v1/traces') });
    old.answerNext({ kind: 'status', status: 503, retryAfter: '600' }, { kind: 'status', status: 503, retryAfter: '600' });
    const written = Array.from({ length: 5 }, () => callLog(ws.organizationGuid));
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('both signals told to come back in 10 minutes', async () => {
      const cursors = await t.runtime.services.db.selectFrom('forwarder_cursors').selectAll().where('organization_guid', '=', ws.organizationGuid).execute();
      return cursors.length === 2 && cursors.every((c) => c.attempts === 1);
    });
    // The admin points the workspace at a collector that works (logs), and re-saves the traces URL unchanged.
    await configure(ws.token, { logsCollectorUrl: fixed.url('/v1/logs'), tracesCollectorUrl: old.url('/v1/traces') });
    await until('the logs at the new collector and the spans at the old one', () => fixed.logs.length >= 5 && old.spans.length >= 5);
    expect(new Set(fixed.logs.map((l) => String(l.attributes['log.record.uid'])))).toEqual(new Set(written.map((w) => w.guid)));
    expect(old.logs).toEqual([]);
  });

  it('a save during a send to the old collector is not undone by that send failing', async () => {
    const ws = await newWorkspace(t);
    const old = await otlp();
    const fixed = await otlp();
    await configure(ws.token, { logsCollectorUrl: old.url('/v1/logs') });
    let release!: () => void;
    const until503 = new Promise<void>((resolve) => (release = resolve));
    old.answerNext({ kind: 'hold', until: until503, then: { kind: 'status', status: 503, retryAfter: '600' } });
    const written = Array.from({ length: 5 }, () => callLog(ws.organizationGuid));
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('the batch on the wire to the old collector', () => old.arrived >= 1);
    await configure(ws.token, { logsCollectorUrl: fixed.url('/v1/logs') });
    release();
    await until('the logs at the new collector', () => fixed.logs.length >= 5);
    expect(new Set(fixed.logs.map((l) => String(l.attributes['log.record.uid'])))).toEqual(new Set(written.map((w) => w.guid)));
  });
});
