import { describe, expect, it } from 'vitest';
import { CAPABILITY_GROUPS } from '../src/core/capabilities.js';
import { assertNeverLeaked, invoke, newWorkspace, rest, storeKind, SURFACES, type Surface, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const SPEC_GROUPS = [
  'Identities',
  'Servers',
  'Gateways',
  'Hosts',
  'People',
  'Workspace settings',
  'Logging',
  'Alerting',
  'Reporting',
  'Integrations',
  'Partner Portal',
];
const SPEC_KEYS = [
  'viewAllGateways',
  'basicGatewayManagement',
  'createAndManageApiTokens',
  'archiveGateway',
  'manageTeamGatewayProvisioning',
  'accessAllIdentities',
  'identityManagement',
  'viewAllServers',
  'basicServerManagement',
  'enableDisableServers',
  'deleteServers',
  'enableDisableHosts',
  'deleteHosts',
  'enableDisableConnections',
  'exportLogs',
  'seeAllAlerts',
  'manageOtelCollector',
  'manageTeams',
  'manageRoles',
  'manageUserRoles',
  'manageUserTeams',
  'inviteUsers',
  'removeUsers',
];

describe.each(SURFACES)('session on %s', (surface: Surface) => {
  it('whoami resolves user, workspace, teams, role and capabilities', async () => {
    const ws = await newWorkspace(t);
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'Mine' })).body;
    const member = await newMember(t, ws, ['exportLogs', 'seeAllAlerts'], [team.guid]);
    const res = await invoke(t, surface, member.token, 'whoami');
    expect(res.body).toEqual({
      user: { guid: member.userGuid, emailAddress: member.email, displayName: member.email },
      organization: { guid: ws.organizationGuid, name: expect.any(String), type: 'standard' },
      teams: [{ guid: team.guid, name: 'Mine' }],
      role: { guid: member.roleGuid, name: expect.any(String) },
      capabilities: ['exportLogs', 'seeAllAlerts'],
    });
  });

  it('list_capabilities has the eleven groups, every named key, and Partner Portal keys only for partners', async () => {
    const partner = await newWorkspace(t, { partner: true });
    const res = await invoke(t, surface, partner.token, 'list_capabilities');
    expect(res.body.groups.map((g: { name: string }) => g.name)).toEqual(SPEC_GROUPS);
    const keys = res.body.groups.flatMap((g: { capabilities: { key: string }[] }) => g.capabilities.map((c) => c.key));
    for (const key of SPEC_KEYS) expect(keys).toContain(key);
    for (const g of res.body.groups) {
      expect(g.capabilities.length).toBeGreaterThan(0);
      for (const c of g.capabilities)
        expect(c).toEqual({ key: expect.any(String), label: expect.stringMatching(/\S/), description: expect.stringMatching(/\S/) });
    }
    const standard = await newWorkspace(t);
    const std = await invoke(t, surface, standard.token, 'list_capabilities');
    // The eleven names for every workspace; Partner Portal without keys outside a partner workspace.
    expect(std.body.groups.map((g: { name: string }) => g.name)).toEqual(SPEC_GROUPS);
    expect(std.body.groups.find((g: { name: string }) => g.name === 'Partner Portal').capabilities).toEqual([]);
    const stdKeys = std.body.groups.flatMap((g: { capabilities: { key: string }[] }) => g.capabilities.map((c) => c.key));
    expect(stdKeys).toEqual(keys.filter((k: string) => !['managePartnerWorkspaces', 'viewPartnerBilling'].includes(k)));
    // The bootstrap Administrator role grants every capability its workspace can have.
    const who = await invoke(t, surface, partner.token, 'whoami');
    expect(who.body.capabilities.sort()).toEqual(CAPABILITY_GROUPS.flatMap((g) => g.capabilities.map((c) => c.key)).sort());
  });

  it('create_access_token mints once per label, with the right lifetime, and never shows the secret again', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_access_token', { label: 'ci' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({
      id: expect.any(String),
      label: 'ci',
      prefix: expect.stringMatching(/^[A-Za-z0-9]{8}$/),
      token: expect.stringMatching(/^svcp_[A-Za-z0-9]{8}_[A-Za-z0-9]{43}$/),
      expiresAt: expect.any(String),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      alreadyExisted: false,
    });
    expect(res.body.token.split('_')[1]).toBe(res.body.prefix);
    const days = (Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)) / 86_400_000;
    expect(days).toBeCloseTo(90, 5);

    const again = await invoke(t, surface, ws.token, 'create_access_token', { label: 'ci', expiresInDays: 5 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: res.body.id, token: null, alreadyExisted: true, expiresAt: res.body.expiresAt });

    const never = await invoke(t, surface, ws.token, 'create_access_token', { label: 'forever', expiresInDays: 0 });
    expect(never.body.expiresAt).toBeNull();
    const one = await invoke(t, surface, ws.token, 'create_access_token', { label: 'short', expiresInDays: 1 });
    expect((Date.parse(one.body.expiresAt) - Date.parse(one.body.createdAt)) / 86_400_000).toBeCloseTo(1, 5);
    for (const bad of [91, -1, 1.5, '7']) {
      const r = await invoke(t, surface, ws.token, 'create_access_token', { label: `bad-${String(bad)}`, expiresInDays: bad });
      expect(r.status).toBe(400);
      expect(r.body.errors[0].path).toBe('expiresInDays');
    }
    expect((await invoke(t, surface, ws.token, 'create_access_token', { label: '' })).status).toBe(400);

    // The new token works, and lastUsedAt shows its use.
    expect((await invoke(t, 'rest', res.body.token, 'whoami')).status).toBe(200);
    const listed = await invoke(t, surface, ws.token, 'list_access_tokens');
    const row = listed.body.items.find((x: { id: string }) => x.id === res.body.id);
    expect(row).toEqual({
      id: res.body.id,
      label: 'ci',
      kind: 'access',
      prefix: res.body.prefix,
      createdAt: res.body.createdAt,
      expiresAt: res.body.expiresAt,
      lastUsedAt: expect.any(String),
      gatewayGuid: null,
    });
    assertNeverLeaked(t, [res.body.token, never.body.token, one.body.token], [listed.body]);
  });

  it('lastUsedAt survives the flush to the database', async () => {
    const ws = await newWorkspace(t);
    const created = (await invoke(t, surface, ws.token, 'create_access_token', { label: 'flushed' })).body;
    await invoke(t, 'rest', created.token, 'whoami');
    await t.runtime.services.tokenUsage.flush();
    const stored = await t.runtime.services.db.selectFrom('access_tokens').select('last_used_at').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(stored.last_used_at).toBeInstanceOf(Date);
  });

  it('revoke_access_token ends a token on its next use, only for its owner, and frees the label', async () => {
    const ws = await newWorkspace(t);
    const created = (await invoke(t, surface, ws.token, 'create_access_token', { label: 'temp' })).body;
    const other = await newMember(t, ws, []);
    const foreign = await invoke(t, surface, other.token, 'revoke_access_token', { id: created.id });
    expect(foreign.status).toBe(404);
    expect((await invoke(t, 'rest', created.token, 'whoami')).status).toBe(200);
    const res = await invoke(t, surface, ws.token, 'revoke_access_token', { id: created.id });
    expect(res.body).toEqual({ revoked: true, id: created.id });
    const after = await invoke(t, 'rest', created.token, 'whoami');
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthenticated');
    expect((await invoke(t, surface, ws.token, 'list_access_tokens')).body.items.map((x: { id: string }) => x.id)).not.toContain(created.id);
    expect((await invoke(t, surface, ws.token, 'revoke_access_token', { id: created.id })).status).toBe(404);
    const fresh = await invoke(t, surface, ws.token, 'create_access_token', { label: 'temp' });
    expect(fresh.body.alreadyExisted).toBe(false);
    expect(fresh.body.token).not.toBeNull();
  });

  it('an expired token fails with the same answer as an unknown one', async () => {
    const ws = await newWorkspace(t);
    const created = (await invoke(t, surface, ws.token, 'create_access_token', { label: 'old', expiresInDays: 1 })).body;
    await t.runtime.services.db
      .updateTable('access_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', created.id)
      .execute();
    const expired = await rest(t, created.token, 'GET', '/whoami');
    const unknown = await rest(t, created.token.slice(0, -1) + (created.token.endsWith('A') ? 'B' : 'A'), 'GET', '/whoami');
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual(unknown.body);
  });
});

describe('a refused admin token', () => {
  it('gets a 401 with a Bearer challenge on REST and at the MCP endpoint, the same whatever was wrong', async () => {
    const ws = await newWorkspace(t);
    const revoked = (await invoke(t, 'rest', ws.token, 'create_access_token', { label: 'gone' })).body;
    await invoke(t, 'rest', ws.token, 'revoke_access_token', { id: revoked.id });
    const mcpCall = (token: string | null) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/svc-admin/mcp',
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    // RFC 9110 section 15.5.2: every 401 carries a challenge; RFC 6750 section 3.1: an error code only when a token was sent.
    for (const [token, challenge] of [
      [null, 'Bearer'],
      ['not-a-token', 'Bearer error="invalid_token"'],
      [revoked.token, 'Bearer error="invalid_token"'],
    ] as const) {
      const viaRest = await rest(t, token, 'GET', '/whoami');
      const viaMcp = await mcpCall(token);
      for (const answer of [
        { status: viaRest.status, headers: viaRest.headers, body: viaRest.body },
        { status: viaMcp.statusCode, headers: viaMcp.headers, body: JSON.parse(viaMcp.body) },
      ]) {
        expect(answer.status).toBe(401);
        expect(answer.headers['www-authenticate']).toBe(challenge);
        expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(answer.body).toEqual({
          type: 'urn:svc-admin:problem:unauthenticated',
          title: 'Unauthenticated',
          status: 401,
          detail: 'A valid access token is required: send it as `Authorization: Bearer <token>`.',
          code: 'unauthenticated',
        });
      }
    }
    // A caller that is refused for anything else is not challenged.
    expect((await rest(t, (await newMember(t, ws, [])).token, 'GET', '/roles')).headers['www-authenticate']).toBeUndefined();
  });
});

describe('tokens are workspace-scoped', () => {
  it("another workspace's token id cannot be revoked", async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const tok = (await invoke(t, 'rest', b.token, 'create_access_token', { label: 'b' })).body;
    expect((await invoke(t, 'mcp', a.token, 'revoke_access_token', { id: tok.id })).status).toBe(404);
    expect((await invoke(t, 'rest', tok.token, 'whoami')).status).toBe(200);
  });

  it('concurrent creates with one label mint one token', async () => {
    const ws = await newWorkspace(t);
    const results = await Promise.all(Array.from({ length: 5 }, () => invoke(t, 'rest', ws.token, 'create_access_token', { label: 'race' })));
    expect(results.every((r) => r.status === 200 || r.status === 201)).toBe(true);
    expect(results.filter((r) => r.body.token !== null)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
  });
});

describe('callers are resolved fresh after every change', () => {
  it('an operator command (entitlement revoke) takes effect on the next request, even for a caller just seen', async () => {
    const { runAdminCommand } = await import('../src/core/admin-commands.js');
    const ws = await newWorkspace(t);
    expect((await invoke(t, 'rest', ws.token, 'whoami')).status).toBe(200);
    await runAdminCommand(t.runtime.services, 'entitlement', { action: 'revoke', org: ws.organizationGuid, key: 'ff-svc-admin' });
    const denied = await invoke(t, 'rest', ws.token, 'whoami');
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('entitlement_required');
    await runAdminCommand(t.runtime.services, 'entitlement', { action: 'grant', org: ws.organizationGuid, key: 'ff-svc-admin' });
    expect((await invoke(t, 'mcp', ws.token, 'whoami')).status).toBe(200);
  });

  it("a change notice heard from another process (the relay's delivery) drops the workspace's kept callers", async () => {
    const ws = await newWorkspace(t);
    expect((await invoke(t, 'rest', ws.token, 'whoami')).status).toBe(200);
    // Another process revokes the token: this one's database sees it, its local notice board does not.
    await t.runtime.services.db.updateTable('access_tokens').set({ revoked_at: new Date() }).where('organization_guid', '=', ws.organizationGuid).execute();
    t.runtime.services.configChanges.deliver(ws.organizationGuid);
    expect((await invoke(t, 'rest', ws.token, 'whoami')).status).toBe(401);
  });

  it('a token used once and then expired fails at its expiry without any change notice', async () => {
    const ws = await newWorkspace(t);
    const created = (await invoke(t, 'rest', ws.token, 'create_access_token', { label: 'short-lived', expiresInDays: 1 })).body;
    expect((await invoke(t, 'rest', created.token, 'whoami')).status).toBe(200);
    if (storeKind() !== 'pglite') return; // only embedded stores keep admin callers
    const { hashToken } = await import('../src/core/auth/tokens.js');
    const { tokens } = t.runtime.services;
    expect(tokens.cached(hashToken(created.token))).toMatchObject({ token_id: created.id });
    expect(tokens.cached(hashToken(created.token), Date.parse(created.expiresAt) + 1)).toBeUndefined();
  });
});
