import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/** Request bodies are refused, never repaired in silence: invalid UTF-8 and prototype keys are a 400 naming them. */
let t: TestApp;
let ws: CreatedWorkspace;

beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
});
afterAll(async () => {
  await t?.close();
});

const post = (url: string, payload: string | Buffer) =>
  t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json' }, payload });

describe('JSON bodies', () => {
  it('refuses invalid UTF-8 instead of storing U+FFFD', async () => {
    const res = await post('/api/v1/svc-admin/teams', Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]));
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'body', message: 'is not valid UTF-8' }] });
    const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
    expect(teams.body.items).toEqual([]);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses %s as a key of a map, naming it, and keeps the stored headers', async (key) => {
    const url = '/api/v1/svc-admin/otel-configuration';
    const set = await invoke(t, 'rest', ws.token, 'set_otel_configuration', {
      logsCollectorUrl: 'http://127.0.0.1:4318/v1/logs',
      headers: { 'X-Key': 'kept-value' },
    });
    expect(set.status).toBe(200);
    const res = await post(url, `{"headers":{"${key}":{"x":"y"}}}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: `headers.${key}`, message: 'is not allowed as a key' }]);
    expect((await invoke(t, 'rest', ws.token, 'get_otel_configuration', {})).body.headerNames).toEqual(['X-Key']);
  });
});

describe('structure no operation takes', () => {
  it('refuses nesting deeper than 128 levels with a 400, on REST and on the MCP endpoint', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const res = await post('/api/v1/svc-admin/teams', `{"name":${deep}}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].message).toBe('nests deeper than 128 levels');
    expect(res.json().errors[0].path).toMatch(/^name(\.0)+$/);
    const mcp = await t.app.inject({
      method: 'POST',
      url: '/api/v1/svc-admin/mcp',
      headers: { authorization: `Bearer ${ws.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_team","arguments":{"name":${deep}}}}`,
    });
    expect(mcp.statusCode).toBe(400);
    expect(mcp.json().code).toBe('validation_failed');
  });

  it('refuses a JSON null body like any body that is not an object', async () => {
    const gateway = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Null body' });
    const res = await post(`/api/v1/svc-admin/gateways/${gateway.body.guid}/disable`, 'null');
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'body', message: 'must be a JSON object' }]);
    expect((await invoke(t, 'rest', ws.token, 'get_gateway', { gatewayGuid: gateway.body.guid })).body.enabled).toBe(true);
  });
});

describe('values no operation can store', () => {
  it.each([
    ['create_team', { name: 'a\u0000b' }, 'name'],
    ['create_gateway', { name: 'x\u0000' }, 'name'],
    ['create_access_token', { label: '\u0000' }, 'label'],
    ['query_logs', { filters: { user_guid: 'a\u0000' } }, 'filters.user_guid'],
    ['list_alerts', { filters: { code: 'x\u0000y' } }, 'filters.code'],
    ['create_team', { name: 'a\u001b[31mb' }, 'name'],
    ['create_host', { name: 'tab\tok but \u0085 not' }, 'name'],
    ['create_gateway', { name: 'lone \ud800 surrogate' }, 'name'],
    ['query_logs', { filters: { trace_id: '\udfff' } }, 'filters.trace_id'],
    ['set_otel_configuration', { logsCollectorUrl: 'http://127.0.0.1:4318/v1/logs', headers: { 'X-\u0000': 'v' } }, 'headers.X-\u0000'],
  ])('%s refuses %j with a 400 naming %s on both surfaces', async (name, input, path) => {
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, input);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
  });
});

describe('ids of the wrong form outside the path', () => {
  it('delete_role with a reassignToRoleGuid of the wrong form in its query is a 404 on both surfaces', async () => {
    const role = await invoke(t, 'rest', ws.token, 'create_role', { name: `Doomed ${Date.now()}` });
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, 'delete_role', { roleGuid: role.body.guid, reassignToRoleGuid: ` ${ws.roleGuid}` });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it.each([
    ['set_user_role', { roleGuid: '12' }],
    ['set_user_role', { roleGuid: '   ' }],
    ['set_user_teams', { teamGuids: 'nope' }],
    ['set_user_teams', { teamGuids: `${'0'.repeat(36)},nope` }],
  ])('%s with %j is a 404 on both surfaces, like an id that names nothing', async (name, input) => {
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user.guid;
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, { userGuid: me, ...input });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });
});
