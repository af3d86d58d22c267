import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, rest, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';

/**
 * A tools/call the admin MCP endpoint answers -32602 before its SDK (arguments null, an
 * array or a string) is still its operation refused after authentication (contract 8.4):
 * one audit record, as REST leaves for a body that is not an object; none for a
 * read-only tool or a tool that does not exist.
 */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

const MCP = '/api/v1/svc-admin/mcp';
const ACCEPT = { accept: 'application/json, text/event-stream' };
const call = (id: number, name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** The JSON-RPC message(s) of an answer, event stream or JSON alike. */
const messagesOf = (body: unknown): any => (typeof body === 'string' ? JSON.parse(body.split('data: ').pop()!) : body);

async function records(ws: CreatedWorkspace, operation: string) {
  const res = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { operation }, take: 1000 });
  return (res.body.items as any[]).map((r) => [r.surface, r.outcome, r.status, r.actor_user_guid]);
}

describe('tool calls refused for their params', () => {
  it('are audited once each, by the executor, and answered -32602 as before', async () => {
    const ws = await newWorkspace(t);
    for (const [id, args] of [
      [1, [1]],
      [2, null],
      [3, 'name=x'],
    ] as const) {
      const res = await rest(t, ws.token, 'POST', MCP, call(id, 'create_team', args), ACCEPT);
      expect(messagesOf(res.body).error.code).toBe(-32602);
    }
    expect(await records(ws, 'create_team')).toEqual(Array.from({ length: 3 }, () => ['mcp', 'validation_failed', 400, ws.userGuid]));
    // Nothing was created.
    expect((await invoke(t, 'rest', ws.token, 'list_teams')).body.items).toEqual([]);
  });

  it('answer a caller without the capability with a record of missing_capability, as REST does', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, []);
    await rest(t, member.token, 'POST', MCP, call(1, 'delete_team', [1]), ACCEPT);
    expect(await records(ws, 'delete_team')).toEqual([['mcp', 'missing_capability', 403, member.userGuid]]);
  });

  it('leave one record per refused message of a batch, and none for a read-only or unknown tool', async () => {
    const ws = await newWorkspace(t);
    const batch = [call(1, 'create_team', [1]), call(2, 'create_team', { name: 'Kept' }), call(3, 'list_teams', []), call(4, 'no_such_tool', [])];
    const res = await rest(t, ws.token, 'POST', MCP, batch, { ...ACCEPT, 'mcp-protocol-version': '2025-03-26' });
    expect(res.status).toBe(200);
    expect((await records(ws, 'create_team')).map((r) => r[1]).sort()).toEqual(['ok', 'validation_failed']);
    expect(await records(ws, 'list_teams')).toEqual([]);
    expect(await records(ws, 'no_such_tool')).toEqual([]);
  });
});
