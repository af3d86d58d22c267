import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { assertNeverLeaked, invoke, newWorkspace, rest, SURFACES, type Surface, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { insertIdentity, insertServer } from './helpers/fixtures.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const DAY_MS = 86_400_000;
const MISSING = '0190d6f4-0000-7000-8000-000000000000';
const created = (surface: Surface) => (surface === 'rest' ? 201 : 200);

const db = () => t.runtime.services.db;
const gatewayTokenRows = (organizationGuid: string) =>
  db().selectFrom('access_tokens').selectAll().where('organization_guid', '=', organizationGuid).where('kind', '=', 'gateway').execute();
const connectionRows = (organizationGuid: string) => db().selectFrom('connections').selectAll().where('organization_guid', '=', organizationGuid).execute();

async function gatewayOf(surface: Surface, ws: CreatedWorkspace, name = 'Support'): Promise<string> {
  return (await invoke(t, surface, ws.token, 'create_gateway', { name })).body.guid;
}

async function assign(
  surface: Surface,
  ws: CreatedWorkspace,
  gatewayGuid: string,
  inboundServerGuid: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid, ...extra });
  expect(res.status).toBe(created(surface));
  return res.body.guid;
}

describe.each(SURFACES)('issue_gateway_token on %s', (surface) => {
  it('mints a gateway token once (201), stores only its hash, and provisions a per-user connection', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const before = Date.now();
    const res = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid });
    expect(res.status).toBe(created(surface));
    expect(res.body).toEqual({
      token: expect.stringMatching(/^svcg_[A-Za-z0-9]{8}_[A-Za-z0-9]{43}$/),
      tokenId: expect.any(String),
      gatewayGuid,
      connectionGuid: expect.any(String),
      url: `http://127.0.0.1:9999/gateways/${gatewayGuid}/mcp`,
    });
    const [row] = await gatewayTokenRows(ws.organizationGuid);
    expect(row).toMatchObject({
      id: res.body.tokenId,
      user_guid: ws.userGuid,
      kind: 'gateway',
      gateway_guid: gatewayGuid,
      connection_guid: res.body.connectionGuid,
      token_hash: createHash('sha256').update(res.body.token).digest('hex'),
      prefix: res.body.token.split('_')[1],
      revoked_at: null,
    });
    expect(JSON.stringify(row)).not.toContain(res.body.token.split('_')[2]);
    expect(row!.expires_at!.getTime()).toBeGreaterThanOrEqual(before + 90 * DAY_MS - 1000);
    expect(row!.expires_at!.getTime()).toBeLessThanOrEqual(Date.now() + 90 * DAY_MS);

    const email = (await invoke(t, surface, ws.token, 'whoami')).body.user.emailAddress;
    const [connection] = await connectionRows(ws.organizationGuid);
    expect(connection).toMatchObject({
      guid: res.body.connectionGuid,
      name: `${email} via Support`,
      enabled: true,
      gateway_guid: gatewayGuid,
      host_guid: null,
      creator_guid: ws.userGuid,
      server_identities: {},
    });
  });

  it('every issue is a fresh token and a fresh connection', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const a = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).body;
    const b = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).body;
    expect(a.token).not.toBe(b.token);
    expect(a.tokenId).not.toBe(b.tokenId);
    expect(a.connectionGuid).not.toBe(b.connectionGuid);
    expect(await connectionRows(ws.organizationGuid)).toHaveLength(2);
  });

  it('the token is never shown again: not in list_access_tokens, connections, logs or any later answer', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const issued = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).body;
    const tokens = await invoke(t, surface, ws.token, 'list_access_tokens');
    const gatewayToken = tokens.body.items.find((x: any) => x.id === issued.tokenId);
    expect(gatewayToken).toEqual({
      id: issued.tokenId,
      label: expect.stringContaining('via Support'),
      kind: 'gateway',
      prefix: issued.token.split('_')[1],
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      lastUsedAt: null,
      gatewayGuid,
    });
    const later = [
      tokens.body,
      (await invoke(t, surface, ws.token, 'list_connections')).body,
      (await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: issued.connectionGuid })).body,
      (await invoke(t, surface, ws.token, 'get_gateway', { gatewayGuid })).body,
      (await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body,
    ];
    assertNeverLeaked(t, [issued.token, issued.token.split('_')[2]], later);
  });

  it('a gateway token is refused by the admin interface (401), on REST and at the MCP endpoint', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const { token } = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).body;
    const whoami = await rest(t, token, 'GET', '/whoami');
    expect(whoami.status).toBe(401);
    expect(whoami.body.code).toBe('unauthenticated');
    const mcp = await rest(
      t,
      token,
      'POST',
      '/api/v1/svc-admin/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { accept: 'application/json, text/event-stream' },
    );
    expect(mcp.status).toBe(401);
  });

  it('revoke_access_token revokes a gateway token by its tokenId; the connection stays', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const issued = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).body;
    const res = await invoke(t, surface, ws.token, 'revoke_access_token', { id: issued.tokenId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revoked: true, id: issued.tokenId });
    expect((await gatewayTokenRows(ws.organizationGuid))[0]!.revoked_at).not.toBeNull();
    expect((await invoke(t, surface, ws.token, 'list_access_tokens')).body.items.map((x: any) => x.id)).not.toContain(issued.tokenId);
    expect((await invoke(t, surface, ws.token, 'get_connection', { connectionGuid: issued.connectionGuid })).status).toBe(200);
    // Another user cannot revoke it.
    const again = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid });
    const colleague = await newMember(t, ws, []);
    expect((await invoke(t, surface, colleague.token, 'revoke_access_token', { id: again.body.tokenId })).status).toBe(404);
  });

  it('fails with 422 identity_selection_required naming every userIdentity server without a selection, and mints nothing', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const s1 = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'headers' });
    const s2 = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'oauth' });
    const shared = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const open = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const i1 = await insertIdentity(t, ws.organizationGuid, s1, ws.userGuid);
    const i2 = await insertIdentity(t, ws.organizationGuid, s2, ws.userGuid);
    await assign(surface, ws, gatewayGuid, s1, { identityScheme: 'userIdentity' });
    await assign(surface, ws, gatewayGuid, s1, { identityScheme: 'userIdentity' }); // twice: named once
    const s2Assignment = await assign(surface, ws, gatewayGuid, s2, { identityScheme: 'userIdentity' });
    await assign(surface, ws, gatewayGuid, shared, { sharedIdentityGuid: await insertIdentity(t, ws.organizationGuid, shared, ws.userGuid) });
    await assign(surface, ws, gatewayGuid, open, { identityScheme: 'userIdentity' }); // an open server needs no identity
    // A disabled assignment still needs a selection: it can be re-enabled at any time.
    await invoke(t, surface, ws.token, 'disable_gateway_assignment', { assignmentGuid: s2Assignment });

    const none = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid });
    expect(none.status).toBe(422);
    expect(none.body.code).toBe('identity_selection_required');
    expect([...none.body.servers].sort()).toEqual([s1, s2].sort());
    expect(none.body.detail).toContain(s1);
    // And by name, for a person reading it (the console shows the detail).
    const s1Name = (await invoke(t, surface, ws.token, 'get_inbound_server', { inboundServerGuid: s1 })).body.name;
    expect(none.body.detail).toContain(`${s1Name} (${s1})`);
    const partial = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, serverIdentities: { [s1]: i1 } });
    expect(partial.status).toBe(422);
    expect(partial.body.servers).toEqual([s2]);
    expect(await gatewayTokenRows(ws.organizationGuid)).toEqual([]);
    expect(await connectionRows(ws.organizationGuid)).toEqual([]);

    // Ids in any case name the same server and identity.
    const ok = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, serverIdentities: { [s1.toUpperCase()]: i1.toUpperCase(), [s2]: i2 } });
    expect(ok.status).toBe(created(surface));
    const [connection] = await connectionRows(ws.organizationGuid);
    expect(connection!.server_identities).toEqual({ [s1]: i1, [s2]: i2 });
  });

  it("a deleted server's userIdentity assignment needs no selection", async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    await assign(surface, ws, gatewayGuid, server, { identityScheme: 'userIdentity' });
    await db().updateTable('inbound_servers').set({ deleted_at: new Date() }).where('guid', '=', server).execute();
    expect((await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).status).toBe(created(surface));
  });

  it('each selection must be a visible, enabled identity of that server, for a userIdentity server of the gateway; nothing is minted otherwise', async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const colleague = await newMember(t, ws, []);
    const gatewayGuid = await gatewayOf(surface, ws);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const notOnGateway = await insertServer(t, ws.organizationGuid, ws.userGuid);
    await assign(surface, ws, gatewayGuid, server, { identityScheme: 'userIdentity' });
    const mine = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid);
    const cases: [string, Record<string, string>, number, string][] = [
      ['private identity of a colleague', { [server]: await insertIdentity(t, ws.organizationGuid, server, colleague.userGuid) }, 404, 'not_found'],
      [
        'identity of another workspace',
        {
          [server]: await insertIdentity(t, other.organizationGuid, await insertServer(t, other.organizationGuid, other.userGuid), other.userGuid, {
            accessControl: 'global',
          }),
        },
        404,
        'not_found',
      ],
      ['unknown identity', { [server]: MISSING }, 404, 'not_found'],
      ['malformed identity', { [server]: 'nope' }, 404, 'not_found'],
      ['identity of another server', { [server]: await insertIdentity(t, ws.organizationGuid, notOnGateway, ws.userGuid) }, 400, 'validation_failed'],
      ['disabled identity', { [server]: await insertIdentity(t, ws.organizationGuid, server, ws.userGuid, { enabled: false }) }, 409, 'conflict'],
      [
        'server not on the gateway',
        { [server]: mine, [notOnGateway]: await insertIdentity(t, ws.organizationGuid, notOnGateway, ws.userGuid) },
        400,
        'validation_failed',
      ],
      ['malformed server guid', { [server]: mine, 'not-a-guid': mine }, 400, 'validation_failed'],
    ];
    for (const [what, serverIdentities, status, code] of cases) {
      const res = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, serverIdentities });
      expect([what, res.status, res.body.code]).toEqual([what, status, code]);
      if (status === 400) expect(res.body.errors[0].path).toMatch(/^serverIdentities\./);
    }
    expect(await gatewayTokenRows(ws.organizationGuid)).toEqual([]);
    // A global identity of a colleague is fine.
    const global = await insertIdentity(t, ws.organizationGuid, server, colleague.userGuid, { accessControl: 'global' });
    expect((await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, serverIdentities: { [server]: global } })).status).toBe(created(surface));
  });

  it('hostGuid binds the connection to a host of the workspace; an unknown or foreign host is 404', async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'Claude' })).body;
    const theirHost = (await invoke(t, surface, other.token, 'create_host', { name: 'Theirs' })).body;
    const res = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, hostGuid: host.guid });
    expect(res.status).toBe(created(surface));
    expect((await connectionRows(ws.organizationGuid))[0]!.host_guid).toBe(host.guid);
    for (const hostGuid of [theirHost.guid, MISSING, 'nope']) {
      const bad = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, hostGuid });
      expect([hostGuid, bad.status]).toEqual([hostGuid, 404]);
    }
    expect(await connectionRows(ws.organizationGuid)).toHaveLength(1);
  });

  it('a disabled gateway still issues tokens (the gateway refuses them until enabled); an archived one does not', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    await invoke(t, surface, ws.token, 'disable_gateway', { gatewayGuid });
    expect((await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid })).status).toBe(created(surface));
    await invoke(t, surface, ws.token, 'archive_gateway', { gatewayGuid });
    const archived = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid });
    expect(archived.status).toBe(409);
    expect(await gatewayTokenRows(ws.organizationGuid)).toHaveLength(1);
  });

  it('needs createAndManageApiTokens only, and always issues for the caller', async () => {
    const ws = await newWorkspace(t);
    const gatewayGuid = await gatewayOf(surface, ws);
    const member = await newMember(t, ws, ['createAndManageApiTokens']);
    const res = await invoke(t, surface, member.token, 'issue_gateway_token', { gatewayGuid });
    expect(res.status).toBe(created(surface));
    const [connection] = await connectionRows(ws.organizationGuid);
    expect(connection).toMatchObject({ creator_guid: member.userGuid, name: `${member.email} via Support` });
    expect((await gatewayTokenRows(ws.organizationGuid))[0]!.user_guid).toBe(member.userGuid);
    const viewer = await newMember(t, ws, ['viewAllGateways']);
    expect((await invoke(t, surface, viewer.token, 'issue_gateway_token', { gatewayGuid })).body).toMatchObject({
      code: 'missing_capability',
      capability: 'createAndManageApiTokens',
    });
  });
});
