import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OtelConfiguration } from '../src/core/operations/collector.js';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';

/**
 * get_otel_configuration / set_otel_configuration: every numbered rule of admin-api.md
 * on both surfaces, the egress check, secrecy of header values and isolation.
 */
let t: TestApp;
const SECRET = 'Splunk hec-token-5f2b9c0e-never-returned';
const OTHER_SECRET = 'Bearer other-secret-77e1d0a4';

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

const LOGS = 'http://127.0.0.1:4318/custom/ingest/logs?tenant=a';
const TRACES = 'http://127.0.0.1:4318/v1/traces';
const HEC = 'http://127.0.0.1:8088/services/collector/event';

describe.each(SURFACES)('collector configuration on %s', (surface) => {
  const call = async (token: string, name: string, input: Record<string, unknown> = {}) => {
    const res = await invoke(t, surface, token, name, input);
    if (res.status === 200) OtelConfiguration.parse(res.body);
    return res;
  };

  it('reports configured false with resolved defaults before anything is set (rule 5)', async () => {
    const ws = await newWorkspace(t);
    const res = await call(ws.token, 'get_otel_configuration');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ configured: false, logsCollectorUrl: null, logsFormat: 'otlp', tracesCollectorUrl: null, headerNames: [] });
  });

  it('requires at least one URL (rule 1)', async () => {
    const ws = await newWorkspace(t);
    for (const input of [{}, { logsFormat: 'otlp' }, { headers: { Authorization: SECRET } }]) {
      const res = await call(ws.token, 'set_otel_configuration', input);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['logsCollectorUrl', 'tracesCollectorUrl']);
    }
    expect((await call(ws.token, 'get_otel_configuration')).body.configured).toBe(false);
  });

  it('stores URLs exactly as given and updates each independently (rule 2)', async () => {
    const ws = await newWorkspace(t);
    let res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ configured: true, logsCollectorUrl: LOGS, logsFormat: 'otlp', tracesCollectorUrl: null, headerNames: [] });
    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES });
    expect(res.body).toMatchObject({ logsCollectorUrl: LOGS, tracesCollectorUrl: TRACES });
    const bare = 'http://127.0.0.1:4318';
    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: bare });
    expect(res.body).toMatchObject({ logsCollectorUrl: bare, tracesCollectorUrl: TRACES });
    expect((await call(ws.token, 'get_otel_configuration')).body).toMatchObject({ configured: true, logsCollectorUrl: bare, tracesCollectorUrl: TRACES });
  });

  it('null stops one signal only; configured turns false when both are gone', async () => {
    const ws = await newWorkspace(t);
    await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, tracesCollectorUrl: TRACES });
    let res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: null });
    expect(res.body).toMatchObject({ configured: true, logsCollectorUrl: LOGS, tracesCollectorUrl: null });
    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: null });
    expect(res.body).toMatchObject({ configured: false, logsCollectorUrl: null, tracesCollectorUrl: null });
  });

  it('resolves and keeps logsFormat, and a non-default format needs a logs URL (rule 3)', async () => {
    const ws = await newWorkspace(t);
    let res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES, logsFormat: 'collector_hec' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'logsFormat' }));
    expect((await call(ws.token, 'get_otel_configuration')).body.configured).toBe(false);

    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: HEC, logsFormat: 'collector_hec' });
    expect(res.body).toMatchObject({ logsCollectorUrl: HEC, logsFormat: 'collector_hec' });
    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES });
    expect(res.body).toMatchObject({ logsFormat: 'collector_hec', logsCollectorUrl: HEC, tracesCollectorUrl: TRACES });
    // The stored logs URL satisfies the rule for a call that only repeats the format.
    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES, logsFormat: 'collector_hec' });
    expect(res.status).toBe(200);
    // Removing the logs URL while HEC stays selected is refused.
    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: null });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'logsFormat' }));
    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, logsFormat: 'otlp' });
    expect(res.body).toMatchObject({ logsFormat: 'otlp', logsCollectorUrl: LOGS });
  });

  it('reports otlp for a collector saved before logsFormat existed (rule 3)', async () => {
    const ws = await newWorkspace(t);
    await t.runtime.services.db
      .insertInto('collector_configurations')
      .values({ organization_guid: ws.organizationGuid, logs_url: LOGS, logs_format: null, traces_url: null, header_names: [], headers_secret_guid: null })
      .execute();
    expect((await call(ws.token, 'get_otel_configuration')).body).toMatchObject({ configured: true, logsFormat: 'otlp' });
    expect((await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES })).body.logsFormat).toBe('otlp');
  });

  it('keeps, replaces and clears headers, and never returns a value (rule 4)', async () => {
    const ws = await newWorkspace(t);
    let res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, headers: { Authorization: SECRET, 'X-Scope-OrgID': 'tenant-a' } });
    expect(res.body.headerNames).toEqual(['Authorization', 'X-Scope-OrgID']);
    const seen: unknown[] = [res.body];
    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES });
    expect(res.body.headerNames).toEqual(['Authorization', 'X-Scope-OrgID']);
    seen.push(res.body);
    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES, headers: { 'X-Api-Key': OTHER_SECRET } });
    expect(res.body.headerNames).toEqual(['X-Api-Key']);
    seen.push(res.body, (await call(ws.token, 'get_otel_configuration')).body);
    const row = await t.runtime.services.db
      .selectFrom('collector_configurations')
      .selectAll()
      .where('organization_guid', '=', ws.organizationGuid)
      .executeTakeFirstOrThrow();
    const stored = await t.runtime.services.secrets.get<Record<string, string>>(t.runtime.services.db, ws.organizationGuid, row.headers_secret_guid!);
    expect(stored).toEqual({ 'X-Api-Key': OTHER_SECRET });
    // At rest the value is only ciphertext.
    const secretRow = await t.runtime.services.db.selectFrom('secrets').selectAll().where('guid', '=', row.headers_secret_guid!).executeTakeFirstOrThrow();
    expect(secretRow.ciphertext.toString('utf8')).not.toContain('other-secret');

    res = await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES, headers: {} });
    expect(res.body.headerNames).toEqual([]);
    const cleared = await t.runtime.services.db
      .selectFrom('collector_configurations')
      .selectAll()
      .where('organization_guid', '=', ws.organizationGuid)
      .executeTakeFirstOrThrow();
    expect(cleared.headers_secret_guid).toBeNull();
    expect(await t.runtime.services.db.selectFrom('secrets').select('guid').where('guid', '=', row.headers_secret_guid!).executeTakeFirst()).toBeUndefined();
    seen.push(res.body);
    assertNeverLeaked(t, [SECRET, OTHER_SECRET, 'hec-token-5f2b9c0e', 'other-secret-77e1d0a4'], seen);
  });

  it('drops empty and svc- headers and refuses bad header names without echoing values', async () => {
    const ws = await newWorkspace(t);
    let res = await call(ws.token, 'set_otel_configuration', {
      logsCollectorUrl: LOGS,
      headers: { Authorization: SECRET, 'svc-internal': 'x', 'X-Empty': '' },
    });
    expect(res.body.headerNames).toEqual(['Authorization']);
    for (const [name, value, shown] of [
      ['Bad Name', SECRET, 'Bad…'],
      // A whole header line pasted as the name: the name is shown, never what follows it.
      [`Authorization: ${SECRET}`, 'x', 'Authorization…'],
      ['Content-Type', 'text/plain', 'Content-Type'],
      ['X-Evil', `a\r\nX-Injected: ${SECRET}`, 'X-Evil'],
    ] as const) {
      res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, headers: { [name]: value } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toContainEqual(expect.objectContaining({ path: `headers.${shown}` }));
      assertNeverLeaked(t, [SECRET, 'hec-token-5f2b9c0e'], [res.body]);
    }
    // The refused inputs are audited with the same names: no secret in the record either.
    await t.runtime.services.audit.flush();
    const audit = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { operation: 'set_otel_configuration' }, take: 100 });
    expect(JSON.stringify(audit.body)).toContain('Authorization…');
    assertNeverLeaked(t, [SECRET, 'hec-token-5f2b9c0e'], [audit.body]);
    res = await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, headers: { 'X-A': '1', 'x-a': '2' } });
    expect(res.status).toBe(400);
    expect((await call(ws.token, 'get_otel_configuration')).body.headerNames).toEqual(['Authorization']);
  });

  it('refuses URLs the egress policy forbids, naming the field, and stores nothing', async () => {
    const ws = await newWorkspace(t);
    const cases: [Record<string, unknown>, string][] = [
      [{ logsCollectorUrl: 'http://169.254.169.254/latest/meta-data' }, 'logsCollectorUrl'],
      [{ tracesCollectorUrl: 'http://10.1.2.3:4318/v1/traces' }, 'tracesCollectorUrl'],
      [{ tracesCollectorUrl: 'ftp://127.0.0.1/x' }, 'tracesCollectorUrl'],
      [{ logsCollectorUrl: 'not a url' }, 'logsCollectorUrl'],
      [{ logsCollectorUrl: '' }, 'logsCollectorUrl'],
      [{ logsCollectorUrl: LOGS, tracesCollectorUrl: 'http://[::ffff:169.254.169.254]/' }, 'tracesCollectorUrl'],
      // A password in a URL would be a secret stored, returned and audited in the clear.
      [{ logsCollectorUrl: 'http://user:collector-url-password@127.0.0.1:4318/v1/logs' }, 'logsCollectorUrl'],
    ];
    for (const [input, field] of cases) {
      const res = await call(ws.token, 'set_otel_configuration', input);
      expect(res.status, JSON.stringify(input)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
    }
    expect((await call(ws.token, 'get_otel_configuration')).body.configured).toBe(false);
    // The refusal is audited with the URL as sent, its password masked.
    await t.runtime.services.audit.flush();
    const audit = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { operation: 'set_otel_configuration' }, take: 100 });
    expect(JSON.stringify(audit.body)).toContain('user:[REDACTED]@127.0.0.1:4318');
    assertNeverLeaked(t, ['collector-url-password'], [audit.body]);
  });

  it('is scoped to the workspace and gated by manageOtelCollector', async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    await call(a.token, 'set_otel_configuration', { logsCollectorUrl: LOGS, headers: { Authorization: SECRET } });
    expect((await call(b.token, 'get_otel_configuration')).body.configured).toBe(false);
    await call(b.token, 'set_otel_configuration', { tracesCollectorUrl: TRACES });
    expect((await call(a.token, 'get_otel_configuration')).body).toMatchObject({
      logsCollectorUrl: LOGS,
      tracesCollectorUrl: null,
      headerNames: ['Authorization'],
    });

    const reader = await newMember(t, a, ['exportLogs']);
    const res = await call(reader.token, 'get_otel_configuration');
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'missing_capability', capability: 'manageOtelCollector' });
    const manager = await newMember(t, a, ['manageOtelCollector']);
    expect((await call(manager.token, 'get_otel_configuration')).body.logsCollectorUrl).toBe(LOGS);
  });

  it('creates one forwarder cursor per configured signal (audit records follow the logs URL) and drops it when the signal is removed', async () => {
    const ws = await newWorkspace(t);
    const cursors = async () =>
      (
        await t.runtime.services.db
          .selectFrom('forwarder_cursors')
          .select('signal')
          .where('organization_guid', '=', ws.organizationGuid)
          .orderBy('signal')
          .execute()
      ).map((r) => r.signal);
    await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: LOGS });
    expect(await cursors()).toEqual(['audit', 'logs']);
    const before = await t.runtime.services.db
      .selectFrom('forwarder_cursors')
      .select('checkpoint_at')
      .where('organization_guid', '=', ws.organizationGuid)
      .where('signal', '=', 'logs')
      .executeTakeFirstOrThrow();
    await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: HEC, logsFormat: 'collector_hec', tracesCollectorUrl: TRACES });
    expect(await cursors()).toEqual(['audit', 'logs', 'traces']);
    // Changing the URL keeps the logs checkpoint: nothing is skipped or resent.
    const after = await t.runtime.services.db
      .selectFrom('forwarder_cursors')
      .select('checkpoint_at')
      .where('organization_guid', '=', ws.organizationGuid)
      .where('signal', '=', 'logs')
      .executeTakeFirstOrThrow();
    expect(after.checkpoint_at.getTime()).toBe(before.checkpoint_at.getTime());
    await call(ws.token, 'set_otel_configuration', { tracesCollectorUrl: null });
    expect(await cursors()).toEqual(['audit', 'logs']);
    expect((await call(ws.token, 'set_otel_configuration', { logsCollectorUrl: null, logsFormat: 'otlp', tracesCollectorUrl: TRACES })).status).toBe(200);
    expect(await cursors()).toEqual(['traces']);
  });
});
