import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newGuid } from '../src/core/ids.js';
import { pathParams, type AnyOperation } from '../src/core/operation.js';
import { operations } from '../src/core/operations/index.js';
import { runAdminCommand } from '../src/core/admin-commands.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, rest, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';

/**
 * The admin audit log (contract 8.4): one record per operation that is not
 * read-only, on both surfaces and the operator CLI, whatever its outcome after
 * authentication; none for read-only ones; secrets never recorded.
 */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

/** The workspace's audit records straight from ClickHouse, every column (what a reader of the table sees). */
async function rawRecords(org: string): Promise<Record<string, unknown>[]> {
  await t.runtime.services.audit.flush();
  const res = await t.runtime.services.clickhouse.client.query({
    query: 'SELECT * FROM audit_log WHERE organization_guid = {org:String} ORDER BY created_at',
    query_params: { org },
    format: 'JSONEachRow',
  });
  return res.json<Record<string, unknown>>();
}

async function auditOf(ws: CreatedWorkspace, filters: Record<string, string> = {}) {
  const res = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters, take: 1000 });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items as any[];
}

const withIds = (op: AnyOperation): Record<string, unknown> => Object.fromEntries(pathParams(op).map((p) => [p, newGuid()]));

describe.each(SURFACES)('every operation on %s', (surface) => {
  let ws: CreatedWorkspace;
  const outcomes = new Map<string, { status: number; code: string; input: Record<string, unknown> }>();

  beforeAll(async () => {
    ws = await newWorkspace(t);
    // Each operation once, with well-formed ids that name nothing: most are refused
    // (not found, validation), some succeed; the record must say which.
    for (const op of operations) {
      const input = withIds(op);
      const res = await invoke(t, surface, ws.token, op.name, input);
      outcomes.set(op.name, { status: res.status, code: res.status < 300 ? 'ok' : res.body.code, input });
    }
  });

  it.each(operations.filter((op) => !op.annotations.readOnlyHint).map((op) => [op.name, op] as const))(
    '%s leaves exactly one record with actor, surface, targets and outcome',
    async (name, op) => {
      const records = (await auditOf(ws, { operation: name })).filter((r) => r.surface === surface);
      expect(records).toHaveLength(1);
      const [record] = records;
      const outcome = outcomes.get(name)!;
      expect(record).toMatchObject({
        organization: ws.organizationGuid,
        actor_user_guid: ws.userGuid,
        surface,
        operation: name,
        outcome: outcome.code,
        status: outcome.status,
      });
      expect(record.actor_token_prefix).toBe(ws.token.split('_')[1]);
      for (const p of pathParams(op)) expect(record.target_guids).toContain(outcome.input[p]);
      expect(Date.parse(record.created_at)).toBeGreaterThan(Date.now() - 600_000);
    },
  );

  it('read-only operations leave none', async () => {
    const readOnly = new Set(operations.filter((op) => op.annotations.readOnlyHint).map((op) => op.name));
    const records = await auditOf(ws);
    expect(records.filter((r) => readOnly.has(r.operation))).toEqual([]);
    expect(records.length).toBeGreaterThan(0);
  });
});

describe('the audit log', () => {
  it('records a refusal for lack of capability, with the caller and the capability code', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, []);
    const res = await invoke(t, 'mcp', member.token, 'create_team', { name: 'nope' });
    expect(res.status).toBe(403);
    const [record] = await auditOf(ws, { operation: 'create_team', actor_user_guid: member.userGuid });
    expect(record).toMatchObject({ outcome: 'missing_capability', status: 403, surface: 'mcp', request: { name: 'nope' } });
  });

  it('records a REST request refused before its input was whole: a body that is not JSON, too large, not an object, an unknown field or query parameter', async () => {
    const ws = await newWorkspace(t);
    const json = { 'content-type': 'application/json' };
    const refused = [
      await rest(t, ws.token, 'POST', '/teams', '{"name":"unterminated', json),
      await rest(t, ws.token, 'POST', '/teams', JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }), json),
      await rest(t, ws.token, 'POST', '/teams', '["a"]', json),
      await rest(t, ws.token, 'POST', '/teams', 'name=a', { 'content-type': 'text/plain' }),
      await rest(t, ws.token, 'POST', '/teams', { name: 'Probe', bogusField: 1 }),
      await rest(t, ws.token, 'POST', '/teams?probe=1', { name: 'Probe' }),
    ];
    for (const res of refused) expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
    const records = (await auditOf(ws, { operation: 'create_team' })).reverse();
    expect(records.map((r) => [r.surface, r.outcome, r.status])).toEqual(refused.map(() => ['rest', 'validation_failed', 400]));
    // What could be read of the request is recorded; a body that could not be is not.
    expect(records[4].request).toEqual({ name: 'Probe', bogusField: 1 });
    expect(records[0].request).toEqual({});
    // Nothing was created.
    expect(JSON.stringify((await invoke(t, 'rest', ws.token, 'list_teams', {})).body)).not.toContain('Probe');
  });

  it('records success with the created guid as a target, the source address and user agent; filters combine', async () => {
    const ws = await newWorkspace(t);
    const created = await invoke(t, 'rest', ws.token, 'create_team', { name: 'Platform' });
    expect(created.status).toBe(201);
    const renamed = await invoke(t, 'rest', ws.token, 'rename_team', { teamGuid: created.body.guid, newName: 'Platform 2' });
    expect(renamed.status).toBe(200);
    const records = await auditOf(ws, { target_guid: created.body.guid });
    // Newest first.
    expect(records.map((r) => r.operation)).toEqual(['rename_team', 'create_team']);
    expect(records[1]).toMatchObject({ outcome: 'ok', status: 201, surface: 'rest', source_ip: '127.0.0.1' });
    expect(records[1].user_agent).toBeTypeOf('string');
    expect(await auditOf(ws, { target_guid: created.body.guid, outcome: 'ok', surface: 'mcp' })).toEqual([]);
    expect(await auditOf(ws, { target_guid: created.body.guid, operation: 'rename_team' })).toHaveLength(1);
  });

  it('never records a secret: headers, OAuth fields and collector headers are [REDACTED], proven by looking at every column', async () => {
    const ws = await newWorkspace(t);
    const secrets = ['hdr-secret-value-1', 'oauth-access-secret-2', 'oauth-refresh-secret-3', 'client-secret-4', 'Splunk collector-token-5'];
    await invoke(t, 'rest', ws.token, 'create_inbound_server', {
      name: 'Secretive',
      url: 'https://mcp.example.com/mcp',
      authType: 'headers',
      headers: { 'X-Api-Key': secrets[0] },
    });
    await invoke(t, 'mcp', ws.token, 'create_inbound_server', {
      name: 'OAuth one',
      url: 'https://mcp.example.com/mcp',
      authType: 'oauth',
      oauthAccessToken: secrets[1],
      oauthRefreshToken: secrets[2],
      oauthClientSecret: secrets[3],
      oauthClientId: 'client-id',
      oauthTokenEndpoint: 'https://auth.example.com/token',
    });
    await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
      logsCollectorUrl: 'https://collector.example.com/services/collector/event',
      logsFormat: 'collector_hec',
      headers: { Authorization: secrets[4] },
    });
    const raw = await rawRecords(ws.organizationGuid);
    const text = JSON.stringify(raw);
    for (const secret of [...secrets, 'collector-token-5']) expect(text).not.toContain(secret);
    const requests = raw.map((r) => JSON.parse(String(r.request)));
    expect(requests).toContainEqual(expect.objectContaining({ headers: { 'X-Api-Key': '[REDACTED]' } }));
    expect(requests).toContainEqual(
      expect.objectContaining({ oauthAccessToken: '[REDACTED]', oauthRefreshToken: '[REDACTED]', oauthClientSecret: '[REDACTED]', oauthClientId: 'client-id' }),
    );
    expect(requests).toContainEqual(expect.objectContaining({ headers: { Authorization: '[REDACTED]' } }));
  });

  it('never records a secret sent in a shape the operation refuses (headers as a string or a list of pairs)', async () => {
    const ws = await newWorkspace(t);
    const secret = 'refused-shape-secret-6';
    for (const headers of [`Authorization: Bearer ${secret}`, [['Authorization', secret]]]) {
      const res = await invoke(t, 'rest', ws.token, 'set_otel_configuration', { logsCollectorUrl: 'https://collector.example.com/v1/logs', headers });
      expect(res.status).toBe(400);
    }
    const raw = await rawRecords(ws.organizationGuid);
    expect(raw.length).toBe(2);
    expect(JSON.stringify(raw)).not.toContain(secret);
    for (const r of raw) expect(JSON.parse(String(r.request)).headers).toBe('[REDACTED]');
  });

  it('never records a secret sent under a field name the operation refuses (Headers, header, a credential header at the top)', async () => {
    const ws = await newWorkspace(t);
    // Refused before any lookup: the identity need not exist.
    const identityGuid = newGuid();
    for (const input of [
      { Headers: { 'X-Custom-Key': 'mis-cased-secret-7' } },
      { header: { 'X-Custom-Key': 'singular-secret-8' } },
      { headers: { 'X-Custom-Key': 'ok' }, Authorization: 'top-level-secret-9' },
    ]) {
      const res = await invoke(t, 'rest', ws.token, 'set_identity_headers', { identityGuid, ...input });
      expect(res.status).toBe(400);
    }
    const text = JSON.stringify(await rawRecords(ws.organizationGuid));
    for (const secret of ['mis-cased-secret-7', 'singular-secret-8', 'top-level-secret-9']) expect(text).not.toContain(secret);
    expect(text).toContain('X-Custom-Key');
  });

  it('records an admin’s words as they are: only what cannot be mistaken for words is masked', async () => {
    const ws = await newWorkspace(t);
    await invoke(t, 'rest', ws.token, 'create_team', { name: 'Splunk admins' });
    await invoke(t, 'rest', ws.token, 'create_team', { name: 'Bearer of news' });
    const names = (await auditOf(ws, { operation: 'create_team' })).map((r) => r.request.name);
    expect(names.sort()).toEqual(['Bearer of news', 'Splunk admins']);
  });

  it("keeps workspaces apart: another workspace's records are never listed", async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const team = await invoke(t, 'rest', a.token, 'create_team', { name: 'A only' });
    expect(await auditOf(b, { target_guid: team.body.guid })).toEqual([]);
    expect((await auditOf(b)).every((r) => r.organization === b.organizationGuid)).toBe(true);
    expect(await auditOf(a, { target_guid: team.body.guid })).toHaveLength(1);
  });

  it('records the operator CLI with surface cli and no acting user', async () => {
    const ws = await newWorkspace(t);
    await runAdminCommand(t.runtime.services, 'create-token', { user: ws.userGuid, label: 'cli-made' });
    await expect(runAdminCommand(t.runtime.services, 'entitlement', { action: 'grant', org: ws.organizationGuid, key: 'nope' })).rejects.toThrow();
    const records = await auditOf(ws, { surface: 'cli' });
    expect(records.map((r) => [r.operation, r.outcome])).toEqual([
      ['entitlement', 'validation_failed'],
      ['create-token', 'ok'],
    ]);
    expect(records[1]).toMatchObject({ actor_user_guid: null, actor_token_prefix: null, surface: 'cli' });
    expect(records[1].target_guids).toContain(ws.userGuid);
    expect(JSON.stringify(await rawRecords(ws.organizationGuid))).not.toMatch(/svcp_[A-Za-z0-9]+_[A-Za-z0-9]{20,}/);
  });

  // create-workspace's record named no target: what it made is in its result, not in its flags.
  it('names what create-workspace made among the targets of its record', async () => {
    const made = (await runAdminCommand(t.runtime.services, 'create-workspace', {
      name: 'Audited',
      adminEmail: 'ops@audited.example',
    })) as unknown as CreatedWorkspace;
    const [record] = await auditOf(made, { surface: 'cli', target_guid: made.userGuid });
    expect(record).toMatchObject({ operation: 'create-workspace', outcome: 'ok', organization: made.organizationGuid });
    expect(record.target_guids).toEqual(expect.arrayContaining([made.organizationGuid, made.userGuid, made.roleGuid]));
  });

  it.each([
    [{ filters: { surface: 'smoke' } }, 'filters.surface'],
    [{ filters: { who: 'x' } }, 'filters.who'],
    [{ fromMs: 10, toMs: 5 }, 'fromMs'],
    [{ take: 0 }, 'take'],
    [{ skip: -1 }, 'skip'],
  ])('refuses %j with a 400 naming %s', async (input, path) => {
    const ws = await newWorkspace(t);
    for (const surface of SURFACES) {
      const res = await invoke(t, surface, ws.token, 'query_audit_log', input);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
  });

  it('needs viewAuditLog', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, ['exportLogs']);
    const res = await invoke(t, 'rest', member.token, 'query_audit_log', {});
    expect(res.body).toMatchObject({ code: 'missing_capability', capability: 'viewAuditLog' });
  });
});
