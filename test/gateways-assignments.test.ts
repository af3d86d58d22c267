import { describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, SURFACES, type Surface, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { freezeRow, insertIdentity, insertServer } from './helpers/fixtures.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const MISSING = '0190d6f4-0000-7000-8000-000000000000';

async function setup(surface: Surface): Promise<{ ws: CreatedWorkspace; gatewayGuid: string }> {
  const ws = await newWorkspace(t);
  const gatewayGuid = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body.guid;
  return { ws, gatewayGuid };
}

describe.each(SURFACES)('gateway assignments on %s', (surface) => {
  it('an open server is configured without any scheme: 201, enabled, exact summary, no hint', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({
      guid: expect.any(String),
      gatewayGuid,
      serverGuids: [server],
      enabled: true,
      identityScheme: null,
      sharedIdentityGuid: null,
      configured: true,
      toolFilter: null,
      toolOverrides: null,
    });
  });

  it('a server requiring authentication with no scheme is configured=false with a configurationHint', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    for (const authType of ['headers', 'oauth'] as const) {
      const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType });
      const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server });
      expect(res.body).toMatchObject({ enabled: true, identityScheme: null, configured: false });
      expect(res.body.configurationHint).toMatch(/modify_gateway_assignment/);
      // The hint belongs to creation only: the summary in lists has the exact contract shape.
      const listed = (await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items.find((a: any) => a.guid === res.body.guid);
      expect(Object.keys(listed).sort()).toEqual([
        'configured',
        'enabled',
        'gatewayGuid',
        'guid',
        'identityScheme',
        'serverGuids',
        'sharedIdentityGuid',
        'toolFilter',
        'toolOverrides',
      ]);
      expect(listed.configured).toBe(false);
    }
  });

  it('userIdentity is complete by itself; sharedIdentityGuid is ignored with it', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const identity = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid);
    const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', {
      gatewayGuid,
      inboundServerGuid: server,
      identityScheme: 'userIdentity',
      sharedIdentityGuid: identity,
    });
    expect(res.body).toMatchObject({ identityScheme: 'userIdentity', sharedIdentityGuid: null, configured: true });
    expect(res.body).not.toHaveProperty('configurationHint');
  });

  it('sharedIdentity with a visible identity of the server is configured; the guid alone implies sharedIdentity', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const colleague = await newMember(t, ws, []);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const mine = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid, { accessControl: 'private' });
    const global = await insertIdentity(t, ws.organizationGuid, server, colleague.userGuid, { accessControl: 'global' });
    const a = await invoke(t, surface, ws.token, 'assign_server_to_gateway', {
      gatewayGuid,
      inboundServerGuid: server,
      identityScheme: 'sharedIdentity',
      sharedIdentityGuid: mine,
    });
    expect(a.body).toMatchObject({ identityScheme: 'sharedIdentity', sharedIdentityGuid: mine, configured: true });
    const b = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, sharedIdentityGuid: global });
    expect(b.body).toMatchObject({ identityScheme: 'sharedIdentity', sharedIdentityGuid: global, configured: true });
  });

  it('sharedIdentity needs sharedIdentityGuid (400 naming it), an identity the caller can see (404), of that server (400)', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const colleague = await newMember(t, ws, []);
    const other = await newWorkspace(t);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const otherServer = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const theirPrivate = await insertIdentity(t, ws.organizationGuid, server, colleague.userGuid, { accessControl: 'private' });
    const ofOtherServer = await insertIdentity(t, ws.organizationGuid, otherServer, ws.userGuid, { accessControl: 'global' });
    const ofOtherWorkspace = await insertIdentity(t, other.organizationGuid, await insertServer(t, other.organizationGuid, other.userGuid), other.userGuid, {
      accessControl: 'global',
    });
    const assign = (extra: Record<string, unknown>) =>
      invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, ...extra });

    const noGuid = await assign({ identityScheme: 'sharedIdentity' });
    expect(noGuid.status).toBe(400);
    expect(noGuid.body.errors).toContainEqual(expect.objectContaining({ path: 'sharedIdentityGuid' }));
    for (const guid of [theirPrivate, ofOtherWorkspace, MISSING, 'not-an-id']) {
      const res = await assign({ identityScheme: 'sharedIdentity', sharedIdentityGuid: guid });
      expect([guid, res.status, res.body.code]).toEqual([guid, 404, 'not_found']);
    }
    const wrongServer = await assign({ sharedIdentityGuid: ofOtherServer });
    expect(wrongServer.status).toBe(400);
    expect(wrongServer.body.errors).toContainEqual(expect.objectContaining({ path: 'sharedIdentityGuid' }));
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([]);
  });

  it('a server can be assigned to the same gateway several times; each assignment has its own guid', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const identity = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid);
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, identityScheme: 'userIdentity' })).body;
    const b = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, sharedIdentityGuid: identity })).body;
    const c = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    expect(new Set([a.guid, b.guid, c.guid]).size).toBe(3);
    const { configurationHint: _hint, ...cSummary } = c;
    const list = await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([a, b, cSummary]);
  });

  it('assigning a server: deleted, unknown, malformed or foreign is 404; a disabled one is accepted (inert until enabled)', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const other = await newWorkspace(t);
    const deleted = await insertServer(t, ws.organizationGuid, ws.userGuid, { deleted: true });
    const foreign = await insertServer(t, other.organizationGuid, other.userGuid, { authType: 'none' });
    for (const guid of [deleted, foreign, MISSING, 'nope']) {
      const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: guid });
      expect([guid, res.status, res.body.code]).toEqual([guid, 404, 'not_found']);
    }
    const disabled = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none', enabled: false });
    expect((await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: disabled })).status).toBe(
      surface === 'rest' ? 201 : 200,
    );
  });

  it('assigning to an archived gateway is a 409 and creates nothing', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    await invoke(t, surface, ws.token, 'archive_gateway', { gatewayGuid });
    const res = await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('conflict');
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([]);
  });

  it('disable and enable an assignment: it stays listed, and nothing is written when unchanged', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const { configurationHint: _h, ...a } = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    let thaw = await freezeRow(t, 'gateway_assignments', a.guid);
    expect((await invoke(t, surface, ws.token, 'enable_gateway_assignment', { assignmentGuid: a.guid })).body).toEqual(a);
    await thaw();
    const disabled = await invoke(t, surface, ws.token, 'disable_gateway_assignment', { assignmentGuid: a.guid });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toEqual({ ...a, enabled: false });
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([{ ...a, enabled: false }]);
    thaw = await freezeRow(t, 'gateway_assignments', a.guid);
    expect((await invoke(t, surface, ws.token, 'disable_gateway_assignment', { assignmentGuid: a.guid })).body).toEqual({ ...a, enabled: false });
    await thaw();
    expect((await invoke(t, surface, ws.token, 'enable_gateway_assignment', { assignmentGuid: a.guid })).body).toEqual(a);
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([a]);
  });

  it('remove_gateway_assignment removes only that assignment', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    const b = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    const res = await invoke(t, surface, ws.token, 'remove_gateway_assignment', { assignmentGuid: a.guid });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ removed: true, assignmentGuid: a.guid });
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items.map((x: any) => x.guid)).toEqual([b.guid]);
    expect((await invoke(t, surface, ws.token, 'remove_gateway_assignment', { assignmentGuid: a.guid })).status).toBe(404);
    expect((await invoke(t, surface, ws.token, 'enable_gateway_assignment', { assignmentGuid: a.guid })).status).toBe(404);
  });

  it('modify_gateway_assignment switches schemes, re-points and clears the shared identity, and writes nothing when unchanged', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const first = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid);
    const second = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid, { accessControl: 'global' });
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    expect(a.configured).toBe(false);
    const modify = (input: Record<string, unknown>) => invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: a.guid, ...input });

    // No scheme yet: sharedIdentity without a guid has nothing to point at.
    const noGuid = await modify({ identityScheme: 'sharedIdentity' });
    expect(noGuid.status).toBe(400);
    expect(noGuid.body.errors).toContainEqual(expect.objectContaining({ path: 'sharedIdentityGuid' }));

    const user = await modify({ identityScheme: 'userIdentity', sharedIdentityGuid: first });
    expect(user.status).toBe(200);
    expect(user.body).toEqual({
      guid: a.guid,
      gatewayGuid,
      serverGuids: [server],
      enabled: true,
      identityScheme: 'userIdentity',
      sharedIdentityGuid: null,
      configured: true,
      toolFilter: null,
      toolOverrides: null,
    });

    const shared = await modify({ sharedIdentityGuid: first });
    expect(shared.body).toMatchObject({ identityScheme: 'sharedIdentity', sharedIdentityGuid: first, configured: true });
    const repointed = await modify({ identityScheme: 'sharedIdentity', sharedIdentityGuid: second.toUpperCase() });
    expect(repointed.body).toMatchObject({ identityScheme: 'sharedIdentity', sharedIdentityGuid: second });
    // Staying on sharedIdentity without a guid keeps the current one.
    expect((await modify({ identityScheme: 'sharedIdentity' })).body.sharedIdentityGuid).toBe(second);

    const thaw = await freezeRow(t, 'gateway_assignments', a.guid);
    expect((await modify({ sharedIdentityGuid: second })).status).toBe(200);
    expect((await modify({})).body).toEqual(repointed.body);
    await thaw();

    const cleared = await modify({ identityScheme: 'userIdentity' });
    expect(cleared.body).toMatchObject({ identityScheme: 'userIdentity', sharedIdentityGuid: null });
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([cleared.body]);
  });

  it('modify_gateway_assignment checks the shared identity like assignment does', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const colleague = await newMember(t, ws, []);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const otherServer = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const theirPrivate = await insertIdentity(t, ws.organizationGuid, server, colleague.userGuid);
    const ofOtherServer = await insertIdentity(t, ws.organizationGuid, otherServer, ws.userGuid);
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, identityScheme: 'userIdentity' })).body;
    expect((await invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: a.guid, sharedIdentityGuid: theirPrivate })).status).toBe(404);
    expect((await invoke(t, surface, ws.token, 'modify_gateway_assignment', { assignmentGuid: a.guid, sharedIdentityGuid: ofOtherServer })).status).toBe(400);
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([a]);
  });

  it('configured follows the shared identity: disabled or deleted later makes the assignment configured=false', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const db = t.runtime.services.db;
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid);
    const identity = await insertIdentity(t, ws.organizationGuid, server, ws.userGuid);
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server, sharedIdentityGuid: identity })).body;
    expect(a.configured).toBe(true);
    const configured = async () => (await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items[0].configured;
    await db.updateTable('identities').set({ enabled: false }).where('guid', '=', identity).execute();
    expect(await configured()).toBe(false);
    await db.updateTable('identities').set({ enabled: true }).where('guid', '=', identity).execute();
    expect(await configured()).toBe(true);
    await db.deleteFrom('identities').where('guid', '=', identity).execute();
    expect(await configured()).toBe(false);
  });

  it('a deleted server leaves its assignments in place (inert)', async () => {
    const { ws, gatewayGuid } = await setup(surface);
    const server = await insertServer(t, ws.organizationGuid, ws.userGuid, { authType: 'none' });
    const a = (await invoke(t, surface, ws.token, 'assign_server_to_gateway', { gatewayGuid, inboundServerGuid: server })).body;
    await t.runtime.services.db.updateTable('inbound_servers').set({ deleted_at: new Date() }).where('guid', '=', server).execute();
    expect((await invoke(t, surface, ws.token, 'list_gateway_assignments', { gatewayGuid })).body.items).toEqual([a]);
  });

  it("another workspace's assignment is 404 on every operation that takes one, and stays untouched", async () => {
    const mine = await setup(surface);
    const theirs = await setup(surface);
    const server = await insertServer(t, theirs.ws.organizationGuid, theirs.ws.userGuid, { authType: 'none' });
    const { configurationHint: _h, ...a } = (
      await invoke(t, surface, theirs.ws.token, 'assign_server_to_gateway', { gatewayGuid: theirs.gatewayGuid, inboundServerGuid: server })
    ).body;
    for (const [op, extra] of [
      ['modify_gateway_assignment', { identityScheme: 'userIdentity' }],
      ['enable_gateway_assignment', {}],
      ['disable_gateway_assignment', {}],
      ['remove_gateway_assignment', {}],
    ] as const) {
      const res = await invoke(t, surface, mine.ws.token, op, { assignmentGuid: a.guid, ...extra });
      expect([op, res.status, res.body.code]).toEqual([op, 404, 'not_found']);
    }
    expect((await invoke(t, surface, theirs.ws.token, 'list_gateway_assignments', { gatewayGuid: theirs.gatewayGuid })).body.items).toEqual([a]);
    // A viewer of my workspace sees none of it either.
    const viewer = await newMember(t, mine.ws, ['viewAllGateways']);
    expect((await invoke(t, surface, viewer.token, 'list_gateway_assignments', { gatewayGuid: theirs.gatewayGuid })).status).toBe(404);
  });
});
