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

describe('values no operation can store', () => {
  it.each([
    ['create_team', { name: 'a\u0000b' }, 'name'],
    ['create_gateway', { name: 'x\u0000' }, 'name'],
    ['create_access_token', { label: '\u0000' }, 'label'],
    ['query_logs', { filters: { user_guid: 'a\u0000' } }, 'filters.user_guid'],
    ['list_alerts', { filters: { code: 'x\u0000y' } }, 'filters.code'],
  ])('%s refuses %j with a 400 naming %s on both surfaces', async (name, input, path) => {
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, input);
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: any) => e.path)).toContain(path);
    }
  });
});

describe('ids of the wrong form outside the path', () => {
  it.each([
    ['set_user_role', { roleGuid: '12' }],
    ['set_user_role', { roleGuid: '   ' }],
    ['set_user_teams', { teamGuids: ['nope'] }],
  ])('%s with %j is a 404 on both surfaces, like an id that names nothing', async (name, input) => {
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user.guid;
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, { userGuid: me, ...input });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });
});
