import { describe, expect, it } from 'vitest';
import { Role } from '../src/core/operations/roles.js';
import { Team } from '../src/core/operations/teams.js';
import { User } from '../src/core/operations/users.js';
import { invoke, newWorkspace, SURFACES, type Surface, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

describe.each(SURFACES)('teams on %s', (surface: Surface) => {
  it('creates, lists, renames (saving only on change) and deletes a team', async () => {
    const ws = await newWorkspace(t);
    const created = await invoke(t, surface, ws.token, 'create_team', { name: 'Platform' });
    expect(created.status).toBe(surface === 'rest' ? 201 : 200);
    expect(Team.parse(created.body)).toEqual({ guid: expect.any(String), name: 'Platform', enabled: true });
    const guid = created.body.guid;

    const listed = await invoke(t, surface, ws.token, 'list_teams');
    expect(listed.body.items).toEqual([created.body]);

    const renamed = await invoke(t, surface, ws.token, 'rename_team', { teamGuid: guid, newName: 'Infra' });
    expect(renamed.body).toEqual({ guid, name: 'Infra', enabled: true });
    const same = await invoke(t, surface, ws.token, 'rename_team', { teamGuid: guid, newName: 'Infra' });
    expect(same.status).toBe(200);
    expect(same.body.name).toBe('Infra');

    const deleted = await invoke(t, surface, ws.token, 'delete_team', { teamGuid: guid });
    expect(deleted.body).toEqual({ deleted: true, teamGuid: guid });
    expect((await invoke(t, surface, ws.token, 'list_teams')).body.items).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'delete_team', { teamGuid: guid })).status).toBe(404);
  });

  it('refuses empty names and shows a caller without manageTeams only their own teams', async () => {
    const ws = await newWorkspace(t);
    const bad = await invoke(t, surface, ws.token, 'create_team', { name: '   ' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('name');
    const a = (await invoke(t, surface, ws.token, 'create_team', { name: 'A' })).body;
    await invoke(t, surface, ws.token, 'create_team', { name: 'B' });
    const member = await newMember(t, ws, [], [a.guid]);
    const seen = await invoke(t, surface, member.token, 'list_teams');
    expect(seen.body.items.map((x: { name: string }) => x.name)).toEqual(['A']);
    expect((await invoke(t, surface, ws.token, 'list_teams')).body.items).toHaveLength(2);
  });

  it('deleting a team removes its memberships', async () => {
    const ws = await newWorkspace(t);
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'Gone' })).body;
    const member = await newMember(t, ws, [], [team.guid]);
    await invoke(t, surface, ws.token, 'delete_team', { teamGuid: team.guid });
    const users = (await invoke(t, surface, ws.token, 'list_users')).body.items;
    expect(users.find((u: { guid: string }) => u.guid === member.userGuid).teamGuids).toEqual([]);
  });
});

describe.each(SURFACES)('roles on %s', (surface: Surface) => {
  it('creates a role from grants, treating anything but "true" as false, and lists it', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_role', {
      name: 'Viewer',
      grants: { viewAllGateways: 'true', viewAllServers: 'yes', exportLogs: 'false' },
    });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(Role.parse(res.body)).toEqual({ guid: expect.any(String), name: 'Viewer', grantedCapabilities: ['viewAllGateways'] });
    const empty = await invoke(t, surface, ws.token, 'create_role', { name: 'Nothing' });
    expect(empty.body.grantedCapabilities).toEqual([]);
    const roles = (await invoke(t, surface, ws.token, 'list_roles')).body.items;
    expect(roles.map((r: { name: string }) => r.name)).toEqual(['Administrator', 'Viewer', 'Nothing']);
  });

  it('refuses unknown capability keys, naming them', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_role', { name: 'X', grants: { notACapability: 'true' } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'grants.notACapability', message: expect.any(String) }]);
    // Thousands of bad keys are counted, not all repeated: the answer names the first 50, each cut at 1,000 characters.
    const many = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`notACapability${i}`, 'true']));
    const flood = await invoke(t, surface, ws.token, 'create_role', { name: 'X', grants: { ['k'.repeat(5_000)]: 'true', ...many } });
    expect(flood.status).toBe(400);
    expect(flood.body.errors).toHaveLength(50);
    expect(flood.body.errors[0].path).toBe(`grants.${'k'.repeat(993)}…`);
    expect(flood.body.detail).toMatch(/^20001 invalid parameters, the first 50: grants\.k+…, grants\.notACapability0, /);
    expect(JSON.stringify(flood.body).length).toBeLessThan(20_000);
    // Partner Portal keys exist only in partner workspaces.
    const partnerKey = await invoke(t, surface, ws.token, 'create_role', { name: 'X', grants: { managePartnerWorkspaces: 'true' } });
    expect(partnerKey.status).toBe(400);
    const partner = await newWorkspace(t, { partner: true });
    expect(
      (await invoke(t, surface, partner.token, 'create_role', { name: 'P', grants: { managePartnerWorkspaces: 'true' } })).body.grantedCapabilities,
    ).toEqual(['managePartnerWorkspaces']);
  });

  it('modify_role merges grants and renames; unchanged input changes nothing', async () => {
    const ws = await newWorkspace(t);
    const role = (await invoke(t, surface, ws.token, 'create_role', { name: 'R', grants: { viewAllGateways: 'true', exportLogs: 'true' } })).body;
    const merged = await invoke(t, surface, ws.token, 'modify_role', { roleGuid: role.guid, grants: { exportLogs: 'false', seeAllAlerts: 'true' } });
    expect(merged.body.grantedCapabilities).toEqual(['seeAllAlerts', 'viewAllGateways']);
    const renamed = await invoke(t, surface, ws.token, 'modify_role', { roleGuid: role.guid, name: 'Renamed' });
    expect(renamed.body).toEqual({ guid: role.guid, name: 'Renamed', grantedCapabilities: ['seeAllAlerts', 'viewAllGateways'] });
    const same = await invoke(t, surface, ws.token, 'modify_role', { roleGuid: role.guid, name: 'Renamed', grants: { seeAllAlerts: 'true' } });
    expect(same.body).toEqual(renamed.body);
  });

  it('a role change takes effect on the holder at the next request', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, []);
    expect((await invoke(t, surface, member.token, 'list_roles')).status).toBe(403);
    await invoke(t, surface, ws.token, 'modify_role', { roleGuid: member.roleGuid, grants: { manageRoles: 'true' } });
    expect((await invoke(t, surface, member.token, 'list_roles')).status).toBe(200);
    const who = await invoke(t, surface, member.token, 'whoami');
    expect(who.body.capabilities).toEqual(['manageRoles']);
  });

  it('delete_role moves every user to the replacement first', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, ['exportLogs']);
    const target = (await invoke(t, surface, ws.token, 'create_role', { name: 'Target' })).body;
    const missing = await invoke(t, surface, ws.token, 'delete_role', { roleGuid: member.roleGuid });
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].path).toBe('reassignToRoleGuid');
    const self = await invoke(t, surface, ws.token, 'delete_role', { roleGuid: member.roleGuid, reassignToRoleGuid: member.roleGuid });
    expect(self.status).toBe(400);
    const res = await invoke(t, surface, ws.token, 'delete_role', { roleGuid: member.roleGuid, reassignToRoleGuid: target.guid });
    expect(res.body).toEqual({ deleted: true, reassignedUsers: 1 });
    const users = (await invoke(t, surface, ws.token, 'list_users')).body.items;
    expect(users.find((u: { guid: string }) => u.guid === member.userGuid)).toMatchObject({ roleGuid: target.guid, roleName: 'Target' });
    expect((await invoke(t, surface, ws.token, 'list_roles')).body.items.map((r: { guid: string }) => r.guid)).not.toContain(member.roleGuid);
  });
});

describe.each(SURFACES)('the last user who can give roles back, on %s', (surface: Surface) => {
  it('is kept: no role change, deletion or deactivation may leave the workspace without one', async () => {
    const ws = await newWorkspace(t);
    const viewer = (await invoke(t, surface, ws.token, 'create_role', { name: 'Viewer', grants: { viewAllGateways: 'true' } })).body;
    const lockout = /no active user of the workspace holding manageRoles and manageUserRoles/;
    const refusals = [
      await invoke(t, surface, ws.token, 'delete_role', { roleGuid: ws.roleGuid, reassignToRoleGuid: viewer.guid }),
      await invoke(t, surface, ws.token, 'modify_role', { roleGuid: ws.roleGuid, grants: { manageUserRoles: 'false' } }),
      await invoke(t, surface, ws.token, 'set_user_role', { userGuid: ws.userGuid, roleGuid: viewer.guid }),
    ];
    // A user who may remove users but not give roles cannot deactivate the last one who can.
    const remover = await newMember(t, ws, ['removeUsers']);
    refusals.push(await invoke(t, surface, remover.token, 'deactivate_user', { userGuid: ws.userGuid }));
    for (const res of refusals) expect([res.status, res.body.code, res.body.detail]).toEqual([409, 'conflict', expect.stringMatching(lockout)]);
    // Nothing changed: the administrator still administers.
    const roles = (await invoke(t, surface, ws.token, 'list_roles')).body.items;
    expect(roles.map((r: { name: string }) => r.name)).toContain('Administrator');
    expect(roles.find((r: { guid: string }) => r.guid === ws.roleGuid).grantedCapabilities).toContain('manageUserRoles');
    // With a second such user, the first may step down; a rename alone is never refused.
    const second = await newMember(t, ws, ['manageRoles', 'manageUserRoles']);
    expect((await invoke(t, surface, ws.token, 'modify_role', { roleGuid: ws.roleGuid, name: 'Admins' })).status).toBe(200);
    const steppedDown = await invoke(t, surface, ws.token, 'set_user_role', { userGuid: ws.userGuid, roleGuid: viewer.guid });
    expect([steppedDown.status, steppedDown.body.roleGuid]).toEqual([200, viewer.guid]);
    const self = await invoke(t, surface, second.token, 'set_user_role', { userGuid: second.userGuid, roleGuid: viewer.guid });
    expect(self.status).toBe(409);
  });
});

describe.each(SURFACES)('users on %s', (surface: Surface) => {
  it('invites a user with role, teams and referrer; a second invite of the same email conflicts', async () => {
    const ws = await newWorkspace(t);
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body;
    const res = await invoke(t, surface, ws.token, 'invite_user', {
      email: 'Ann@Example.test',
      firstName: 'Ann',
      lastName: 'Lee',
      roleGuid: ws.roleGuid,
      teamGuids: team.guid,
    });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({ email: 'ann@example.test', userGuid: expect.any(String) });
    const user = (await invoke(t, surface, ws.token, 'list_users')).body.items.find((u: { guid: string }) => u.guid === res.body.userGuid);
    expect(User.parse(user)).toEqual({
      guid: res.body.userGuid,
      emailAddress: 'ann@example.test',
      displayName: 'Ann Lee',
      isActive: true,
      roleGuid: ws.roleGuid,
      roleName: 'Administrator',
      teamGuids: [team.guid],
    });
    const again = await invoke(t, surface, ws.token, 'invite_user', { email: 'ann@example.test' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
  });

  it('an invite without a role lands on a capability-less Member role; bad references are refused', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'invite_user', { email: 'bob@example.test' });
    const user = (await invoke(t, surface, ws.token, 'list_users')).body.items.find((u: { guid: string }) => u.guid === res.body.userGuid);
    expect(user.roleName).toBe('Member');
    const member = (await invoke(t, surface, ws.token, 'list_roles')).body.items.find((r: { name: string }) => r.name === 'Member');
    expect(member.grantedCapabilities).toEqual([]);
    expect((await invoke(t, surface, ws.token, 'invite_user', { email: 'not-an-email' })).body.errors[0].path).toBe('email');
    const ghostRole = await invoke(t, surface, ws.token, 'invite_user', { email: 'c@example.test', roleGuid: '01a1fdd9-0000-7000-8000-000000000000' });
    expect(ghostRole.status).toBe(404);
    // An id that names nothing is a 404 whatever its form, in a list as in a field of its own (roleGuid).
    const malformedRole = await invoke(t, surface, ws.token, 'invite_user', { email: 'c@example.test', roleGuid: 'nope' });
    expect(malformedRole.status).toBe(404);
    const badTeams = await invoke(t, surface, ws.token, 'invite_user', { email: 'd@example.test', teamGuids: `nope,${'x'.repeat(500)}` });
    expect([badTeams.status, badTeams.body.detail]).toEqual([404, `Team not found: "nope", "${'x'.repeat(64)}".`]);
    const ghostTeams = Array.from({ length: 7 }, (_, i) => `01a1fdd9-0000-7000-8000-00000000000${i}`).join(',');
    expect((await invoke(t, surface, ws.token, 'invite_user', { email: 'd@example.test', teamGuids: ghostTeams })).body.detail).toMatch(/ and 2 more\.$/);
    // A list sent as an array is of the wrong type, whatever it holds.
    const listed = await invoke(t, surface, ws.token, 'invite_user', { email: 'd@example.test', teamGuids: ['nope'] });
    expect([listed.status, listed.body.errors?.[0].path]).toEqual([400, 'teamGuids']);
    expect((await invoke(t, surface, ws.token, 'list_users')).body.items.some((u: { emailAddress: string }) => u.emailAddress === 'd@example.test')).toBe(
      false,
    );
  });

  it('set_user_role and set_user_teams (exact set; empty string clears)', async () => {
    const ws = await newWorkspace(t);
    const member = await newMember(t, ws, []);
    const [a, b, c] = await Promise.all(['A', 'B', 'C'].map(async (name) => (await invoke(t, surface, ws.token, 'create_team', { name })).body.guid));
    const r1 = await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: member.userGuid, teamGuids: `${a},${b}` });
    expect([...r1.body.teamGuids].sort()).toEqual([a, b].sort());
    const r2 = await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: member.userGuid, teamGuids: `${b}, ${c}` });
    expect([...r2.body.teamGuids].sort()).toEqual([b, c].sort());
    const r3 = await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: member.userGuid, teamGuids: '' });
    expect(r3.body.teamGuids).toEqual([]);
    const role = await invoke(t, surface, ws.token, 'set_user_role', { userGuid: member.userGuid, roleGuid: ws.roleGuid });
    expect(role.body).toMatchObject({ guid: member.userGuid, roleGuid: ws.roleGuid, roleName: 'Administrator' });
    expect((await invoke(t, surface, ws.token, 'set_user_role', { userGuid: member.userGuid, roleGuid: member.userGuid })).status).toBe(404);
  });

  it('list_users shows everyone to user managers, else the caller and their team mates', async () => {
    const ws = await newWorkspace(t);
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body.guid;
    const plain = await newMember(t, ws, [], [team]);
    const mate = await newMember(t, ws, [], [team]);
    const stranger = await newMember(t, ws, []);
    const seenByPlain = (await invoke(t, surface, plain.token, 'list_users')).body.items.map((u: { guid: string }) => u.guid);
    expect(seenByPlain.sort()).toEqual([plain.userGuid, mate.userGuid].sort());
    const seenByStranger = (await invoke(t, surface, stranger.token, 'list_users')).body.items.map((u: { guid: string }) => u.guid);
    expect(seenByStranger).toEqual([stranger.userGuid]);
    for (const cap of ['manageUserRoles', 'manageUserTeams', 'inviteUsers', 'removeUsers']) {
      const manager = await newMember(t, ws, [cap]);
      expect((await invoke(t, surface, manager.token, 'list_users')).body.items.length).toBeGreaterThanOrEqual(5);
    }
  });

  it('deactivate_user ends their tokens at once, removes memberships and keeps the record', async () => {
    const ws = await newWorkspace(t);
    const team = (await invoke(t, surface, ws.token, 'create_team', { name: 'T' })).body.guid;
    const member = await newMember(t, ws, [], [team]);
    expect((await invoke(t, surface, member.token, 'whoami')).status).toBe(200);
    const res = await invoke(t, surface, ws.token, 'deactivate_user', { userGuid: member.userGuid });
    expect(res.body).toEqual({ deactivated: member.userGuid });
    const after = await invoke(t, 'rest', member.token, 'whoami');
    expect(after.status).toBe(401);
    const record = (await invoke(t, surface, ws.token, 'list_users')).body.items.find((u: { guid: string }) => u.guid === member.userGuid);
    expect(record).toMatchObject({ isActive: false, teamGuids: [] });
    // Nothing gives a deactivated user a team back (their membership was removed); asking for none is already so.
    const regained = await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: member.userGuid, teamGuids: team });
    expect([regained.status, regained.body.code]).toEqual([409, 'conflict']);
    expect((await invoke(t, surface, ws.token, 'set_user_teams', { userGuid: member.userGuid, teamGuids: '' })).status).toBe(200);
    // Idempotent, and an admin cannot lock themselves out.
    expect((await invoke(t, surface, ws.token, 'deactivate_user', { userGuid: member.userGuid })).status).toBe(200);
    expect((await invoke(t, surface, ws.token, 'deactivate_user', { userGuid: ws.userGuid })).status).toBe(409);
  });
});

describe.each(SURFACES)('workspace isolation of people resources on %s', (surface: Surface) => {
  it("another workspace's teams, roles and users are not found and never listed", async () => {
    const mine = await newWorkspace(t);
    const theirs = await newWorkspace(t);
    const team = (await invoke(t, surface, theirs.token, 'create_team', { name: 'Theirs' })).body.guid;
    const role = (await invoke(t, surface, theirs.token, 'create_role', { name: 'Theirs' })).body.guid;
    const user = (await invoke(t, surface, theirs.token, 'invite_user', { email: 'x@theirs.test' })).body.userGuid;
    const attempts: [string, Record<string, unknown>][] = [
      ['rename_team', { teamGuid: team, newName: 'hijack' }],
      ['delete_team', { teamGuid: team }],
      ['modify_role', { roleGuid: role, name: 'hijack' }],
      ['delete_role', { roleGuid: role, reassignToRoleGuid: mine.roleGuid }],
      ['delete_role', { roleGuid: mine.roleGuid, reassignToRoleGuid: role }],
      ['set_user_role', { userGuid: user, roleGuid: mine.roleGuid }],
      ['set_user_role', { userGuid: mine.userGuid, roleGuid: role }],
      ['set_user_teams', { userGuid: user, teamGuids: '' }],
      ['set_user_teams', { userGuid: mine.userGuid, teamGuids: team }],
      ['deactivate_user', { userGuid: user }],
      ['invite_user', { email: 'y@mine.test', roleGuid: role }],
      ['invite_user', { email: 'z@mine.test', teamGuids: team }],
    ];
    for (const [name, input] of attempts) {
      const res = await invoke(t, surface, mine.token, name, input);
      expect(res.status, name).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    const lists = await Promise.all(['list_teams', 'list_roles', 'list_users'].map((n) => invoke(t, surface, mine.token, n)));
    const text = JSON.stringify(lists.map((l) => l.body));
    for (const guid of [team, role, user]) expect(text).not.toContain(guid);
    // Their data is untouched.
    expect((await invoke(t, surface, theirs.token, 'list_teams')).body.items[0].name).toBe('Theirs');
  });
});
