import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * Hostile input the fuzz test does not send: prototype keys in a query string (the
 * body parser refuses them, fastify's query parser keeps them), and a value of the
 * wrong type that zod also measures (an empty array for a string with a minimum).
 */
let t: TestApp;
let ws: CreatedWorkspace;

beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

const request = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: string) =>
  t.app.inject({
    method,
    url: `/api/v1/svc-admin${url}`,
    headers: { authorization: `Bearer ${ws.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload }),
  });

describe('prototype keys in the query string', () => {
  it.each(['__proto__=x', '__proto__=a&__proto__=b', 'constructor=x', 'prototype=x'])(
    'DELETE with ?%s is refused naming the key, and deletes nothing',
    async (query) => {
      const team = await invoke(t, 'rest', ws.token, 'create_team', { name: `Kept ${query}` });
      const res = await request('DELETE', `/teams/${team.body.guid}?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual([query.split('=')[0]]);
      const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
      expect(teams.body.items.map((x: { guid: string }) => x.guid)).toContain(team.body.guid);
    },
  );

  it.each(['GET /teams', 'POST /teams'])('%s with ?__proto__=a&__proto__=b names __proto__, not 0 and 1', async (route) => {
    const [method, url] = route.split(' ') as ['GET' | 'POST', string];
    const res = await request(method, `${url}?__proto__=a&__proto__=b`, method === 'POST' ? '{"name":"Never stored"}' : undefined);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: '__proto__', message: 'is not allowed as a key' }]);
    const teams = await invoke(t, 'rest', ws.token, 'list_teams', {});
    expect(teams.body.items.map((x: { name: string }) => x.name)).not.toContain('Never stored');
  });
});

describe('a value of the wrong type', () => {
  it.each([
    ['create_team', 'name'],
    ['create_access_token', 'label'],
    ['set_user_role', 'roleGuid'],
  ])('%s with %s: [] is one error, the type, on both surfaces', async (name, field) => {
    const me = (await invoke(t, 'rest', ws.token, 'whoami', {})).body.user.guid;
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, name, { ...(name === 'set_user_role' ? { userGuid: me } : {}), [field]: [] });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: field, message: 'Invalid input: expected string, received array' }]);
    }
  });

  it('get_usage_report with groupBy: "tool_name" is one error, the type (not also "at most three keys"), on both surfaces', async () => {
    for (const surface of ['rest', 'mcp'] as const) {
      const res = await invoke(t, surface, ws.token, 'get_usage_report', { groupBy: 'tool_name' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: 'groupBy', message: 'Invalid input: expected array, received string' }]);
    }
  });
});
