import net from 'node:net';
import { describe, expect, it } from 'vitest';
import pkg from '../package.json' with { type: 'json' };
import { assertNeverLeaked, invoke, newWorkspace, type TestApp } from './helpers/harness.js';
import { forwarderKit, until } from './helpers/forwarder-kit.js';
import { callLog, writeCallLogs } from './helpers/forwarder-rows.js';

/**
 * A collector that keeps failing in a way that is retried (3xx, 5xx, unreachable):
 * the forwarder holds the backlog, and the workspace hears of it once per run of
 * failures (collector_export_failed), not once per try and not never.
 */
let t: TestApp;
const COLLECTOR_SECRET = `collector-secret-${Math.random().toString(36).slice(2, 12)}`;
const kit = forwarderKit({ options: { backoffInitialMs: 10, backoffMaxMs: 40 }, onStart: (app) => (t = app) });
const { alerts, forwarder, otlp } = kit;
const cursor = (org: string) =>
  t.runtime.services.db.selectFrom('forwarder_cursors').selectAll().where('organization_guid', '=', org).where('signal', '=', 'logs').executeTakeFirstOrThrow();
const exportAlerts = (org: string) => alerts.filter((a) => a.organizationGuid === org && a.code === 'collector_export_failed');

/** A loopback port with nothing listening: connections are refused. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

describe('a collector that keeps failing with retried answers', () => {
  it.each([
    ['5xx', 503],
    ['redirects', 307],
  ])('raises one collector_export_failed after repeated %s, holds every record, and delivers them when it recovers', async (_label, status) => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    const configured = await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
      logsCollectorUrl: r.url('/v1/logs'),
      headers: { Authorization: `Bearer ${COLLECTOR_SECRET}` },
    });
    expect(configured.status).toBe(200);
    const failures = 6;
    r.answerNext(...Array.from({ length: failures }, () => ({ kind: 'status' as const, status, body: `nope ${COLLECTOR_SECRET}` })));
    const written = Array.from({ length: 30 }, () => callLog(ws.organizationGuid));
    await writeCallLogs(t.runtime.services, written);
    forwarder();
    await until('every row after the failures', () => new Set(r.logs.map((l) => String(l.attributes['log.record.uid']))).size >= written.length);
    const c = await cursor(ws.organizationGuid);
    expect(c.failed_total).toBe(0);
    expect(c.retried_total).toBeGreaterThan(0);
    const raised = exportAlerts(ws.organizationGuid);
    expect(raised.length).toBe(1);
    // The scripted failures go to whichever signal asks first: the logs, or the audit records sent to the same URL.
    expect(raised[0]).toMatchObject({
      messageType: 'error',
      debugContext: { responseStatus: status, attempts: 3, heldRecords: expect.any(Number), signal: expect.stringMatching(/^(logs|audit)$/) },
    });
    assertNeverLeaked(t, [COLLECTOR_SECRET], [alerts]);
  });

  it('the alert read through get_alert carries the collector answer (status, headers, body) redacted, and the engine details', async () => {
    const ws = await newWorkspace(t);
    const r = await otlp();
    const apiKey = `collector-key-${Math.random().toString(36).slice(2, 12)}`;
    await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
      logsCollectorUrl: r.url('/v1/logs'),
      headers: { Authorization: `Bearer ${COLLECTOR_SECRET}`, 'X-Collector-Key': apiKey },
    });
    const answer = {
      kind: 'status' as const,
      status: 503,
      headers: { 'x-peer-trace': 'collector-503', 'x-collector-key': apiKey, 'x-debug-echo': `got ${apiKey}` },
      body: `overloaded; your key ${apiKey} is fine`,
    };
    r.answerNext(...Array.from({ length: 6 }, () => answer));
    await writeCallLogs(t.runtime.services, [callLog(ws.organizationGuid)]);
    forwarder();
    let guid: string | undefined;
    await until('the stored alert', async () => {
      guid = (await invoke(t, 'rest', ws.token, 'list_alerts', { filters: { code: 'collector_export_failed' } })).body.items[0]?.guid;
      return guid !== undefined;
    });
    const res = await invoke(t, 'rest', ws.token, 'get_alert', { alertGuid: guid });
    expect(res.body.debugContext).toMatchObject({
      responseStatus: 503,
      responseHeaders: { 'x-peer-trace': 'collector-503', 'x-collector-key': '[REDACTED]', 'x-debug-echo': 'got [REDACTED]' },
      responseBody: 'overloaded; your key [REDACTED] is fine',
      engine: { name: pkg.name, version: pkg.version, node: process.version, signal: expect.stringMatching(/^(logs|audit)$/), format: 'otlp' },
      attempts: 3,
      heldRecords: expect.any(Number),
    });
    assertNeverLeaked(t, [COLLECTOR_SECRET, apiKey], [res.body]);
  });

  it('raises it once for a collector that cannot be reached, whatever goes there (logs and audit), and not again while the failures go on', async () => {
    const ws = await newWorkspace(t);
    const configured = await invoke(t, 'rest', ws.token, 'set_otel_configuration', { logsCollectorUrl: `http://127.0.0.1:${await closedPort()}/v1/logs` });
    expect(configured.status).toBe(200);
    await writeCallLogs(t.runtime.services, [callLog(ws.organizationGuid)]);
    forwarder();
    await until('eight failed tries', async () => (await cursor(ws.organizationGuid)).attempts >= 8);
    const raised = exportAlerts(ws.organizationGuid);
    expect(raised.length).toBe(1);
    expect(raised[0]!.message).toMatch(/ECONNREFUSED/);
    expect(raised[0]!.debugContext).toMatchObject({ responseStatus: null, heldRecords: expect.any(Number) });
  });
});
