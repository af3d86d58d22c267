import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../src/core/operations/index.js';
import { closeClients, newWorkspace, rest, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ ADMIN_RATE_LIMIT_PER_MINUTE: '5' });
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

describe('the HTTP edge', () => {
  it('publishes an OpenAPI 3.1 document generated from every operation, and a reference page', async () => {
    const doc = (await rest(t, null, 'GET', '/api/v1/svc-admin/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    const documented = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((p) =>
      Object.values(p).map((o) => o.operationId),
    );
    expect(documented.sort()).toEqual(operations.map((op) => op.name).sort());
    const createTeam = doc.paths['/api/v1/svc-admin/teams'].post;
    expect(createTeam.requestBody.content['application/json'].schema).toMatchObject({ type: 'object', required: ['name'], additionalProperties: false });
    expect(createTeam.responses['201']).toBeDefined();
    const deleteRole = doc.paths['/api/v1/svc-admin/roles/{roleGuid}'].delete;
    expect(deleteRole.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'roleGuid', in: 'path', required: true }),
        expect.objectContaining({ name: 'reassignToRoleGuid', in: 'query', required: true }),
      ]),
    );
    const page = await t.app.inject({ method: 'GET', url: '/api/v1/svc-admin/reference/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
  });

  it('answers an unknown route with a problem 404', async () => {
    const res = await rest(t, null, 'GET', '/api/v1/svc-admin/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('not_found');
  });

  it('rate-limits per token with 429 rate_limited and Retry-After, on REST and MCP alike', async () => {
    const ws = await newWorkspace(t);
    const statuses: number[] = [];
    let limited;
    for (let i = 0; i < 7; i++) {
      const res = await rest(t, ws.token, 'GET', '/whoami');
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(limited!.body.code).toBe('rate_limited');
    expect(Number(limited!.headers['retry-after'])).toBeGreaterThan(0);
    const mcp = await rest(
      t,
      ws.token,
      'POST',
      '/api/v1/svc-admin/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { accept: 'application/json, text/event-stream' },
    );
    expect(mcp.status).toBe(429);
    expect(mcp.body.code).toBe('rate_limited');
    // A tool call over the budget is the tool's failure, with the problem (contract 3), and runs nothing.
    const call = await rest(
      t,
      ws.token,
      'POST',
      '/api/v1/svc-admin/mcp',
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_team', arguments: { name: 'Over budget' } } },
      { accept: 'application/json, text/event-stream' },
    );
    expect(call.status).toBe(200);
    // The stateless 2025 leg answers in an event stream: its one message is the answer.
    const answer = typeof call.body === 'string' ? JSON.parse(call.body.split('data: ').pop()!) : call.body;
    const result = answer.result;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ code: 'rate_limited', status: 429, retryAfterSeconds: expect.any(Number) });
    const teams = await t.runtime.services.db.selectFrom('teams').select('name').where('organization_guid', '=', ws.organizationGuid).execute();
    expect(teams).toEqual([]);
    // Refused after authentication, it is audited like any refusal (contract 8.4), on MCP as on REST.
    const refusedTeam = await rest(t, ws.token, 'POST', '/api/v1/svc-admin/teams', { name: 'Over budget too' });
    expect(refusedTeam.body.code).toBe('rate_limited');
    await t.runtime.services.audit.flush();
    const audited = await t.runtime.services.clickhouse.client.query({
      query: "SELECT surface, outcome, status FROM audit_log WHERE organization_guid = {org:String} AND operation = 'create_team' ORDER BY surface",
      query_params: { org: ws.organizationGuid },
      format: 'JSONEachRow',
    });
    expect(await audited.json()).toEqual([
      { surface: 'mcp', outcome: 'rate_limited', status: 429 },
      { surface: 'rest', outcome: 'rate_limited', status: 429 },
    ]);
    // Another caller is not affected.
    const other = await newWorkspace(t);
    expect((await rest(t, other.token, 'GET', '/whoami')).status).toBe(200);
  });

  it('reports health, naming a store that is down', async () => {
    expect((await rest(t, null, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    await t.runtime.services.db.destroy();
    const res = await rest(t, null, 'GET', '/healthz');
    expect(res.status).toBe(503);
    expect(res.body.down).toEqual(['postgres']);
  });
});
