import { describe, expect, it } from 'vitest';
import { invoke, newWorkspace, SURFACES, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { freezeRow } from './helpers/fixtures.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The row's current state straight from the store, to prove what was (not) saved. */
const gatewayRow = (guid: string) => t.runtime.services.db.selectFrom('gateways').selectAll().where('guid', '=', guid).executeTakeFirstOrThrow();

describe.each(SURFACES)('gateways on %s', (surface) => {
  it('create_gateway makes an enabled gateway owned by the caller, with its connect URL, and answers 201', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_gateway', { name: '  Sales  ' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({ guid: expect.stringMatching(GUID), name: 'Sales', enabled: true, url: `http://127.0.0.1:9999/gateways/${res.body.guid}/mcp` });
    const row = await gatewayRow(res.body.guid);
    expect(row.owner_guid).toBe(ws.userGuid);
    expect(row.archived).toBe(false);
    expect(await t.runtime.services.db.selectFrom('gateway_teams').selectAll().where('gateway_guid', '=', res.body.guid).execute()).toEqual([]);
  });

  it('create_gateway refuses an empty name, naming the field', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_gateway', { name: '   ' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'name' }));
  });

  it('get_gateway and list_gateways return exactly {guid, name, enabled, url}', async () => {
    const ws = await newWorkspace(t);
    const a = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'A' })).body;
    const b = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'B' })).body;
    expect((await invoke(t, surface, ws.token, 'get_gateway', { gatewayGuid: a.guid })).body).toEqual(a);
    const list = await invoke(t, surface, ws.token, 'list_gateways');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [a, b] });
  });

  it('rename_gateway renames, and saves nothing when the name is unchanged', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'Old' })).body;
    const renamed = await invoke(t, surface, ws.token, 'rename_gateway', { gatewayGuid: g.guid, newName: 'New' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...g, name: 'New' });
    expect((await gatewayRow(g.guid)).name).toBe('New');
    // The row is frozen: any UPDATE would fail, so a 200 proves nothing was written.
    const thaw = await freezeRow(t, 'gateways', g.guid);
    const same = await invoke(t, surface, ws.token, 'rename_gateway', { gatewayGuid: g.guid, newName: 'New' });
    expect(same.status).toBe(200);
    expect(same.body).toEqual({ ...g, name: 'New' });
    expect((await invoke(t, surface, ws.token, 'rename_gateway', { gatewayGuid: g.guid, newName: 'Newer' })).status).toBe(500);
    await thaw();
  });

  it('disable_gateway and enable_gateway flip enabled and are no-ops when already so', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    let thaw = await freezeRow(t, 'gateways', g.guid);
    const enabledAgain = await invoke(t, surface, ws.token, 'enable_gateway', { gatewayGuid: g.guid });
    expect(enabledAgain.status).toBe(200);
    expect(enabledAgain.body).toEqual(g);
    await thaw();
    const disabled = await invoke(t, surface, ws.token, 'disable_gateway', { gatewayGuid: g.guid });
    expect(disabled.body).toEqual({ ...g, enabled: false });
    expect((await gatewayRow(g.guid)).enabled).toBe(false);
    thaw = await freezeRow(t, 'gateways', g.guid);
    expect((await invoke(t, surface, ws.token, 'disable_gateway', { gatewayGuid: g.guid })).body).toEqual({ ...g, enabled: false });
    await thaw();
    const enabled = await invoke(t, surface, ws.token, 'enable_gateway', { gatewayGuid: g.guid });
    expect(enabled.body).toEqual(g);
    expect((await gatewayRow(g.guid)).enabled).toBe(true);
  });

  it('archive_gateway disables and hides; unarchive_gateway shows it again, still disabled; enable_gateway then enables', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const archived = await invoke(t, surface, ws.token, 'archive_gateway', { gatewayGuid: g.guid });
    expect(archived.status).toBe(200);
    expect(archived.body).toEqual({ ...g, enabled: false, archived: true });
    expect((await invoke(t, surface, ws.token, 'list_gateways')).body.items).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'list_gateways', { includeArchived: false })).body.items).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'list_gateways', { includeArchived: true })).body.items).toEqual([{ ...g, enabled: false }]);
    const notBoolean = await invoke(t, surface, ws.token, 'list_gateways', { includeArchived: 'yes' });
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.body.errors).toContainEqual(expect.objectContaining({ path: 'includeArchived' }));
    // Still addressable by guid.
    expect((await invoke(t, surface, ws.token, 'get_gateway', { gatewayGuid: g.guid })).body).toEqual({ ...g, enabled: false });
    // Archiving twice writes nothing.
    let thaw = await freezeRow(t, 'gateways', g.guid);
    expect((await invoke(t, surface, ws.token, 'archive_gateway', { gatewayGuid: g.guid })).body).toEqual({ ...g, enabled: false, archived: true });
    await thaw();

    const unarchived = await invoke(t, surface, ws.token, 'unarchive_gateway', { gatewayGuid: g.guid });
    expect(unarchived.body).toEqual({ ...g, enabled: false, archived: false });
    expect((await invoke(t, surface, ws.token, 'list_gateways')).body.items).toEqual([{ ...g, enabled: false }]);
    thaw = await freezeRow(t, 'gateways', g.guid);
    expect((await invoke(t, surface, ws.token, 'unarchive_gateway', { gatewayGuid: g.guid })).body).toEqual({ ...g, enabled: false, archived: false });
    await thaw();
    expect((await invoke(t, surface, ws.token, 'enable_gateway', { gatewayGuid: g.guid })).body).toEqual(g);
  });

  it('an archived gateway can be enabled ("always"), renamed and disabled, but receives no servers, teams or tokens (409)', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body;
    await invoke(t, surface, ws.token, 'archive_gateway', { gatewayGuid: g.guid });
    const enable = await invoke(t, surface, ws.token, 'enable_gateway', { gatewayGuid: g.guid });
    expect(enable.status).toBe(200);
    expect(enable.body).toEqual({ ...g, enabled: true });
    expect(await gatewayRow(g.guid)).toMatchObject({ enabled: true, archived: true });
    const teamRes = await invoke(t, surface, ws.token, 'assign_team_to_gateway', { gatewayGuid: g.guid, teamGuid: team.guid });
    expect(teamRes.status).toBe(409);
    const token = await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid: g.guid });
    expect(token.status).toBe(409);
    expect((await invoke(t, surface, ws.token, 'rename_gateway', { gatewayGuid: g.guid, newName: 'Old G' })).body.name).toBe('Old G');
    expect((await invoke(t, surface, ws.token, 'disable_gateway', { gatewayGuid: g.guid })).status).toBe(200);
    // Enabled while archived, it comes back enabled ("enabled stays").
    await invoke(t, surface, ws.token, 'enable_gateway', { gatewayGuid: g.guid });
    expect((await invoke(t, surface, ws.token, 'unarchive_gateway', { gatewayGuid: g.guid })).body).toMatchObject({ enabled: true, archived: false });
  });

  it('assign_team_to_gateway provisions a team idempotently; remove_team_from_gateway removes it, then answers removed false', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body;
    const links = () => t.runtime.services.db.selectFrom('gateway_teams').select('team_guid').where('gateway_guid', '=', g.guid).execute();
    for (let i = 0; i < 2; i++) {
      const res = await invoke(t, surface, ws.token, 'assign_team_to_gateway', { gatewayGuid: g.guid, teamGuid: team.guid });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ assigned: true, gatewayGuid: g.guid, teamGuid: team.guid });
    }
    expect(await links()).toEqual([{ team_guid: team.guid }]);
    const removed = await invoke(t, surface, ws.token, 'remove_team_from_gateway', { gatewayGuid: g.guid, teamGuid: team.guid });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: true });
    expect(await links()).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'remove_team_from_gateway', { gatewayGuid: g.guid, teamGuid: team.guid })).body).toEqual({ removed: false });
  });

  it('deleting a team removes its gateway provisioning, leaving the gateway', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body;
    await invoke(t, surface, ws.token, 'assign_team_to_gateway', { gatewayGuid: g.guid, teamGuid: team.guid });
    await invoke(t, surface, ws.token, 'delete_team', { teamGuid: team.guid });
    expect(await t.runtime.services.db.selectFrom('gateway_teams').selectAll().where('gateway_guid', '=', g.guid).execute()).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'get_gateway', { gatewayGuid: g.guid })).status).toBe(200);
  });

  it('team provisioning answers 404 for an unknown team or gateway', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body;
    const missing = '0190d6f4-0000-7000-8000-000000000000';
    for (const op of ['assign_team_to_gateway', 'remove_team_from_gateway']) {
      expect((await invoke(t, surface, ws.token, op, { gatewayGuid: g.guid, teamGuid: missing })).status).toBe(404);
      expect((await invoke(t, surface, ws.token, op, { gatewayGuid: missing, teamGuid: team.guid })).status).toBe(404);
    }
  });

  it('each operation needs its own capability: viewing is not managing, managing is not archiving', async () => {
    const ws = await newWorkspace(t);
    const g = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body;
    const viewer = await newMember(t, ws, ['viewAllGateways']);
    expect((await invoke(t, surface, viewer.token, 'list_gateways')).body.items).toEqual([g]);
    expect((await invoke(t, surface, viewer.token, 'get_gateway', { gatewayGuid: g.guid })).status).toBe(200);
    const rename = await invoke(t, surface, viewer.token, 'rename_gateway', { gatewayGuid: g.guid, newName: 'x' });
    expect(rename.body).toMatchObject({ code: 'missing_capability', capability: 'basicGatewayManagement' });
    const manager = await newMember(t, ws, ['basicGatewayManagement']);
    expect((await invoke(t, surface, manager.token, 'archive_gateway', { gatewayGuid: g.guid })).body).toMatchObject({
      code: 'missing_capability',
      capability: 'archiveGateway',
    });
    const archiver = await newMember(t, ws, ['archiveGateway']);
    expect((await invoke(t, surface, archiver.token, 'archive_gateway', { gatewayGuid: g.guid })).body.archived).toBe(true);
  });

  it("another workspace's gateway and team are 404 on every operation that takes them", async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const theirs = (await invoke(t, surface, other.token, 'create_gateway', { name: 'Theirs' })).body;
    const theirTeam = (await invoke(t, surface, other.token, 'create_team', { name: 'Their team' })).body;
    const mine = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'Mine' })).body;
    const myTeam = (await invoke(t, surface, ws.token, 'create_team', { name: 'My team' })).body;
    const byGateway: [string, Record<string, unknown>][] = [
      ['get_gateway', {}],
      ['rename_gateway', { newName: 'Stolen' }],
      ['enable_gateway', {}],
      ['disable_gateway', {}],
      ['archive_gateway', {}],
      ['unarchive_gateway', {}],
      ['issue_gateway_token', {}],
      ['list_gateway_assignments', {}],
      ['assign_server_to_gateway', { inboundServerGuid: '0190d6f4-0000-7000-8000-000000000000' }],
      ['assign_team_to_gateway', { teamGuid: myTeam.guid }],
      ['remove_team_from_gateway', { teamGuid: myTeam.guid }],
    ];
    for (const [op, extra] of byGateway) {
      const res = await invoke(t, surface, ws.token, op, { gatewayGuid: theirs.guid, ...extra });
      expect([op, res.status, res.body.code]).toEqual([op, 404, 'not_found']);
    }
    for (const op of ['assign_team_to_gateway', 'remove_team_from_gateway']) {
      const res = await invoke(t, surface, ws.token, op, { gatewayGuid: mine.guid, teamGuid: theirTeam.guid });
      expect([op, res.status]).toEqual([op, 404]);
    }
    expect((await invoke(t, surface, ws.token, 'list_gateways', { includeArchived: true })).body.items).toEqual([mine]);
    const row = await gatewayRow(theirs.guid);
    expect([row.name, row.enabled, row.archived]).toEqual(['Theirs', true, false]);
  });
});
