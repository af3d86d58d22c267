import { describe, expect, it } from 'vitest';
import { invoke, newWorkspace, SURFACES, type Surface, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { freezeRow, insertIdentity, insertServer } from './helpers/fixtures.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const issue = async (surface: Surface, token: string, gatewayGuid: string, extra: Record<string, unknown> = {}): Promise<string> =>
  (await invoke(t, surface, token, 'issue_gateway_token', { gatewayGuid, ...extra })).body.connectionGuid;

async function world(surface: Surface) {
  const ws = await newWorkspace(t);
  const member = await newMember(t, ws, ['createAndManageApiTokens']);
  const g1 = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G1' })).body.guid as string;
  const g2 = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G2' })).body.guid as string;
  const h1 = (await invoke(t, surface, ws.token, 'create_host', { name: 'H1' })).body.guid as string;
  const h2 = (await invoke(t, surface, ws.token, 'create_host', { name: 'H2' })).body.guid as string;
  const c = {
    adminG1H1: await issue(surface, ws.token, g1, { hostGuid: h1 }),
    adminG2: await issue(surface, ws.token, g2),
    memberG1H2: await issue(surface, member.token, g1, { hostGuid: h2 }),
    memberG1H1: await issue(surface, member.token, g1, { hostGuid: h1 }),
  };
  return { ws, member, g1, g2, h1, h2, c };
}

const guidsOf = (body: any): string[] => body.items.map((x: any) => x.guid);

describe.each(SURFACES)('connections on %s', (surface) => {
  it('list_connections lists every connection of the workspace with exactly the row fields', async () => {
    const { ws, member, g1, h1, c } = await world(surface);
    const res = await invoke(t, surface, ws.token, 'list_connections');
    expect(res.status).toBe(200);
    expect(guidsOf(res.body)).toEqual([c.adminG1H1, c.adminG2, c.memberG1H2, c.memberG1H1]);
    const email = (await invoke(t, surface, ws.token, 'whoami')).body.user.emailAddress;
    expect(res.body.items[0]).toEqual({ guid: c.adminG1H1, name: `${email} via G1`, enabled: true, gatewayGuid: g1, hostGuid: h1, creatorGuid: ws.userGuid });
    expect(res.body.items[3]).toMatchObject({ name: `${member.email} via G1`, creatorGuid: member.userGuid });
  });

  it('the filters hostGuid, gatewayGuid and userGuid each narrow the list, and combine', async () => {
    const { ws, member, g1, g2, h1, h2, c } = await world(surface);
    const list = async (filters: Record<string, string>) => guidsOf((await invoke(t, surface, ws.token, 'list_connections', filters)).body);
    expect(await list({ gatewayGuid: g1 })).toEqual([c.adminG1H1, c.memberG1H2, c.memberG1H1]);
    expect(await list({ gatewayGuid: g2 })).toEqual([c.adminG2]);
    expect(await list({ hostGuid: h1 })).toEqual([c.adminG1H1, c.memberG1H1]);
    expect(await list({ userGuid: member.userGuid })).toEqual([c.memberG1H2, c.memberG1H1]);
    expect(await list({ userGuid: member.userGuid, hostGuid: h1 })).toEqual([c.memberG1H1]);
    expect(await list({ gatewayGuid: g1, hostGuid: h2, userGuid: member.userGuid })).toEqual([c.memberG1H2]);
    expect(await list({ gatewayGuid: g2, hostGuid: h1 })).toEqual([]);
    expect(await list({ userGuid: ws.userGuid, gatewayGuid: g1 })).toEqual([c.adminG1H1]);
  });

  it('a filter that is not an id is a 400 naming it', async () => {
    const ws = await newWorkspace(t);
    for (const key of ['hostGuid', 'gatewayGuid', 'userGuid']) {
      const res = await invoke(t, surface, ws.token, 'list_connections', { [key]: 'nope' });
      expect(res.status).toBe(400);
      expect(res.body.errors).toContainEqual(expect.objectContaining({ path: key }));
    }
  });

  it('get_connection adds gatewayName, hostName, creatorEmail, serverCount and the (empty) call activity', async () => {
    const { ws, member, g1, h2, c } = await world(surface);
    const res = await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: c.memberG1H2 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      guid: c.memberG1H2,
      name: `${member.email} via G1`,
      enabled: true,
      gatewayGuid: g1,
      hostGuid: h2,
      creatorGuid: member.userGuid,
      gatewayName: 'G1',
      hostName: 'H2',
      creatorEmail: member.email,
      serverCount: 0,
      lastSuccessfulCallAt: null,
      recentErrors: [],
    });
    const hostless = await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: c.adminG2 });
    expect(hostless.body).toMatchObject({ hostGuid: null, hostName: null, gatewayName: 'G2' });
  });

  it('get_connection reports the last successful call and the newest errors from the call logs, and only its own', async () => {
    const { ws, g1, c } = await world(surface);
    const other = await newWorkspace(t);
    const base = Date.now() - 60_000;
    const row = (i: number, status: 'ok' | 'error', organizationGuid = ws.organizationGuid, connection = c.adminG1H1) => ({
      organizationGuid,
      createdAt: base + i * 1000,
      type: 'tool_call' as const,
      method: 'tools/call',
      toolName: `tool-${i}`,
      status,
      errorMessage: status === 'error' ? `failure ${i}` : null,
      durationMs: 5,
      gatewayConnectionGuid: connection,
      outboundGatewayGuid: g1,
      traceId: i.toString(16).padStart(32, '0'),
    });
    await t.runtime.services.callLogs.write([
      row(1, 'ok'),
      ...Array.from({ length: 12 }, (_, i) => row(2 + i, 'error')),
      row(20, 'ok', ws.organizationGuid, c.adminG2),
      // Another workspace's row naming the same connection guid must not count.
      row(30, 'ok', other.organizationGuid),
    ]);
    await t.runtime.services.callLogs.flush();
    const res = await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: c.adminG1H1 });
    expect(res.body.lastSuccessfulCallAt).toBe(new Date(base + 1000).toISOString());
    expect(res.body.recentErrors).toHaveLength(10);
    expect(res.body.recentErrors[0]).toEqual({
      createdAt: new Date(base + 13_000).toISOString(),
      inboundServerGuid: null,
      toolName: 'tool-13',
      message: 'failure 13',
      traceId: (13).toString(16).padStart(32, '0'),
    });
    expect(res.body.recentErrors.map((e: { toolName: string }) => e.toolName)).toEqual(Array.from({ length: 10 }, (_, i) => `tool-${13 - i}`));
  });

  it('serverCount counts the distinct servers the gateway carries now: enabled assignments of live, enabled servers', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body.guid;
    const assign = async (server: string, extra: Record<string, unknown> = {}) =>
      (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, ...extra })).body.guid as string;
    const open = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const headers = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const disabledServer = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none', enabled: false });
    const doomed = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    await assign(open);
    await assign(open); // the same server twice counts once
    await assign(headers, { sharedIdentityGuid: await insertIdentity(t, ws.organizationGuid, headers, ws.userGuid) });
    await assign(disabledServer);
    const skipped = await assign(doomed);
    const connectionGuid = await issue(surface, ws.token, gatewayGuid);
    const count = async () => (await invoke(t, surface, ws.token, 'get_connection', { connectionGuid })).body.serverCount;
    expect(await count()).toBe(3);
    await invoke(t, surface, ws.token, 'disable_gateway_assignment', { assignmentGuid: skipped });
    expect(await count()).toBe(2);
    await invoke(t, surface, ws.token, 'enable_gateway_assignment', { assignmentGuid: skipped });
    await t.runtime.services.db.updateTable('inbound_servers').set({ deleted_at: new Date() }).where('guid', '=', doomed).execute();
    expect(await count()).toBe(2);
  });

  it('disable_connection cuts a connection off without deleting it; enable_connection restores it; unchanged writes nothing', async () => {
    const { ws, c } = await world(surface);
    const before = (await invoke(t, surface, ws.token, 'list_connections')).body.items.find((x: any) => x.guid === c.adminG2);
    let thaw = await freezeRow(t, 'connections', c.adminG2);
    expect((await invoke(t, surface, ws.token, 'enable_connection', { connectionGuid: c.adminG2 })).body).toEqual(before);
    await thaw();
    const disabled = await invoke(t, surface, ws.token, 'disable_connection', { connectionGuid: c.adminG2 });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toEqual({ ...before, enabled: false });
    expect((await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: c.adminG2 })).body.enabled).toBe(false);
    expect(guidsOf((await invoke(t, surface, ws.token, 'list_connections')).body)).toContain(c.adminG2);
    thaw = await freezeRow(t, 'connections', c.adminG2);
    expect((await invoke(t, surface, ws.token, 'disable_connection', { connectionGuid: c.adminG2 })).body).toEqual({ ...before, enabled: false });
    await thaw();
    expect((await invoke(t, surface, ws.token, 'enable_connection', { connectionGuid: c.adminG2 })).body).toEqual(before);
  });

  it('every connection operation needs enableDisableConnections', async () => {
    const { ws, c } = await world(surface);
    const tokensOnly = await newMember(t, ws, ['createAndManageApiTokens']);
    expect((await invoke(t, surface, tokensOnly.token, 'list_connections')).body).toMatchObject({
      code: 'missing_capability',
      capability: 'enableDisableConnections',
    });
    const switcher = await newMember(t, ws, ['enableDisableConnections']);
    expect(guidsOf((await invoke(t, surface, switcher.token, 'list_connections')).body)).toHaveLength(4);
    expect((await invoke(t, surface, switcher.token, 'disable_connection', { connectionGuid: c.memberG1H1 })).body.enabled).toBe(false);
  });

  it("another workspace's connections are 404 by guid and invisible in lists, even when filtering by their gateway, host or user", async () => {
    const mine = await newWorkspace(t);
    const theirs = await world(surface);
    for (const op of ['get_connection', 'disable_connection', 'enable_connection']) {
      const res = await invoke(t, surface, mine.token, op, { connectionGuid: theirs.c.adminG2 });
      expect([op, res.status, res.body.code]).toEqual([op, 404, 'not_found']);
    }
    for (const filters of [{}, { gatewayGuid: theirs.g1 }, { hostGuid: theirs.h1 }, { userGuid: theirs.member.userGuid }]) {
      expect((await invoke(t, surface, mine.token, 'list_connections', filters)).body.items).toEqual([]);
    }
    expect((await invoke(t, surface, theirs.ws.token, 'get_connection', { connectionGuid: theirs.c.adminG2 })).body.enabled).toBe(true);
  });
});
