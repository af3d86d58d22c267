import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCommand } from '../src/core/admin-commands.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * The audit log's target_guids (contract 8.4, docs/decisions.md "Targets"): every
 * resource an operation names or creates is found by its guid with the target_guid
 * filter, whatever field carries it (a created user's userGuid, a provisioned
 * connection's connectionGuid, the comma-separated teamGuids of set_user_teams).
 */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await closeClients();
  await t?.close();
});

async function operationsTargeting(ws: CreatedWorkspace, guid: string): Promise<string[]> {
  const res = await invoke(t, 'rest', ws.token, 'query_audit_log', { filters: { target_guid: guid }, take: 1000 });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.items as { operation: string }[]).map((r) => r.operation);
}

describe.each(SURFACES)('target_guids on %s', (surface) => {
  it('name the user invite_user created', async () => {
    const ws = await newWorkspace(t);
    const invited = await invoke(t, surface, ws.token, 'invite_user', { email: `target-${surface}@example.test` });
    expect(invited.status).toBeLessThan(300);
    expect(await operationsTargeting(ws, invited.body.userGuid)).toEqual(['invite_user']);
  });

  it('name each team of a comma-separated teamGuids', async () => {
    const ws = await newWorkspace(t);
    const a = await invoke(t, surface, ws.token, 'create_team', { name: 'A' });
    const b = await invoke(t, surface, ws.token, 'create_team', { name: 'B' });
    const set = await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: ws.userGuid, teamGuids: `${a.body.guid}, ${b.body.guid}` });
    expect(set.status).toBe(200);
    expect(await operationsTargeting(ws, a.body.guid)).toEqual(['set_user_teams', 'create_team']);
    expect(await operationsTargeting(ws, b.body.guid)).toEqual(['set_user_teams', 'create_team']);
  });

  it('name the connection issue_gateway_token provisioned', async () => {
    const ws = await newWorkspace(t);
    const gateway = await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' });
    const issued = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid: gateway.body.guid });
    expect(issued.status).toBeLessThan(300);
    expect(await operationsTargeting(ws, issued.body.connectionGuid)).toEqual(['issue_gateway_token']);
  });
});

it('name the workspace, user and role the CLI create-workspace made', async () => {
  const made = (await runAdminCommand(t.runtime.services, 'create-workspace', {
    name: 'Targets',
    adminEmail: 'targets@example.test',
  })) as unknown as CreatedWorkspace & { roleGuid: string };
  for (const guid of [made.organizationGuid, made.userGuid, made.roleGuid]) expect(await operationsTargeting(made, guid)).toEqual(['create-workspace']);
});
