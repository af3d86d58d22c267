import { describe, expect, it } from 'vitest';
import { invoke, newWorkspace, SURFACES, type TestApp } from './helpers/harness.js';
import { useTestApp } from './helpers/lifecycle.js';
import { freezeRow } from './helpers/fixtures.js';
import { newMember } from './helpers/members.js';

let t: TestApp;
useTestApp((app) => (t = app));

const hostRow = (guid: string) => t.runtime.services.db.selectFrom('hosts').selectAll().where('guid', '=', guid).executeTakeFirst();

describe.each(SURFACES)('hosts on %s', (surface) => {
  it('create_host makes an enabled API-token host (201); list_hosts lists exactly {guid, name, enabled, authenticationType}', async () => {
    const ws = await newWorkspace(t);
    const res = await invoke(t, surface, ws.token, 'create_host', { name: ' Claude Desktop ' });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({ guid: expect.any(String), name: 'Claude Desktop', enabled: true, authenticationType: 'apiToken' });
    const second = (await invoke(t, surface, ws.token, 'create_host', { name: 'Agent' })).body;
    const list = await invoke(t, surface, ws.token, 'list_hosts');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ items: [res.body, second] });
    // create_host mints no token: a usable token comes from issue_gateway_token.
    expect((await invoke(t, surface, ws.token, 'list_access_tokens')).body.items.every((x: any) => x.kind === 'access')).toBe(true);
  });

  it('create_host and rename_host refuse an empty name', async () => {
    const ws = await newWorkspace(t);
    expect((await invoke(t, surface, ws.token, 'create_host', { name: '' })).body.errors).toContainEqual(expect.objectContaining({ path: 'name' }));
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'H' })).body;
    expect((await invoke(t, surface, ws.token, 'rename_host', { hostGuid: host.guid, newName: ' ' })).body.errors).toContainEqual(
      expect.objectContaining({ path: 'newName' }),
    );
  });

  it('rename_host renames, and writes nothing when the name is unchanged', async () => {
    const ws = await newWorkspace(t);
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'H' })).body;
    const renamed = await invoke(t, surface, ws.token, 'rename_host', { hostGuid: host.guid, newName: 'H2' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...host, name: 'H2' });
    expect((await hostRow(host.guid))!.name).toBe('H2');
    const thaw = await freezeRow(t, 'hosts', host.guid);
    expect((await invoke(t, surface, ws.token, 'rename_host', { hostGuid: host.guid, newName: 'H2' })).body).toEqual({ ...host, name: 'H2' });
    await thaw();
  });

  it('disable_host and enable_host flip enabled, writing nothing when already so', async () => {
    const ws = await newWorkspace(t);
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'H' })).body;
    let thaw = await freezeRow(t, 'hosts', host.guid);
    expect((await invoke(t, surface, ws.token, 'enable_host', { hostGuid: host.guid })).body).toEqual(host);
    await thaw();
    const disabled = await invoke(t, surface, ws.token, 'disable_host', { hostGuid: host.guid });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toEqual({ ...host, enabled: false });
    expect((await hostRow(host.guid))!.enabled).toBe(false);
    thaw = await freezeRow(t, 'hosts', host.guid);
    expect((await invoke(t, surface, ws.token, 'disable_host', { hostGuid: host.guid })).body).toEqual({ ...host, enabled: false });
    await thaw();
    expect((await invoke(t, surface, ws.token, 'enable_host', { hostGuid: host.guid })).body).toEqual(host);
    expect((await hostRow(host.guid))!.enabled).toBe(true);
  });

  it('delete_host deletes for good; its connections stay, with hostGuid null', async () => {
    const ws = await newWorkspace(t);
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'H' })).body;
    const gatewayGuid = (await invoke(t, surface, ws.token, 'create_gateway', { name: 'G' })).body.guid;
    const { connectionGuid } = (await invoke(t, surface, ws.token, 'issue_gateway_token', { gatewayGuid, hostGuid: host.guid })).body;
    const res = await invoke(t, surface, ws.token, 'delete_host', { hostGuid: host.guid });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true, hostGuid: host.guid });
    expect(await hostRow(host.guid)).toBeUndefined();
    expect((await invoke(t, surface, ws.token, 'list_hosts')).body.items).toEqual([]);
    const connection = await invoke(t, surface, ws.token, 'get_connection', { connectionGuid });
    expect(connection.body).toMatchObject({ guid: connectionGuid, hostGuid: null, hostName: null });
    for (const op of ['delete_host', 'enable_host', 'disable_host']) expect((await invoke(t, surface, ws.token, op, { hostGuid: host.guid })).status).toBe(404);
  });

  it('each host operation needs its capability', async () => {
    const ws = await newWorkspace(t);
    const host = (await invoke(t, surface, ws.token, 'create_host', { name: 'H' })).body;
    const tokens = await newMember(t, ws, ['createAndManageApiTokens']);
    expect((await invoke(t, surface, tokens.token, 'list_hosts')).body.items).toEqual([host]);
    expect((await invoke(t, surface, tokens.token, 'disable_host', { hostGuid: host.guid })).body).toMatchObject({
      code: 'missing_capability',
      capability: 'enableDisableHosts',
    });
    expect((await invoke(t, surface, tokens.token, 'delete_host', { hostGuid: host.guid })).body).toMatchObject({
      code: 'missing_capability',
      capability: 'deleteHosts',
    });
    const switcher = await newMember(t, ws, ['enableDisableHosts']);
    expect((await invoke(t, surface, switcher.token, 'disable_host', { hostGuid: host.guid })).body.enabled).toBe(false);
    const deleter = await newMember(t, ws, ['deleteHosts']);
    expect((await invoke(t, surface, deleter.token, 'delete_host', { hostGuid: host.guid })).body.deleted).toBe(true);
  });

  it("another workspace's host is 404 on every operation that takes one, and is left untouched", async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const theirs = (await invoke(t, surface, other.token, 'create_host', { name: 'Theirs' })).body;
    for (const [op, extra] of [
      ['rename_host', { newName: 'Stolen' }],
      ['enable_host', {}],
      ['disable_host', {}],
      ['delete_host', {}],
    ] as const) {
      const res = await invoke(t, surface, ws.token, op, { hostGuid: theirs.guid, ...extra });
      expect([op, res.status, res.body.code]).toEqual([op, 404, 'not_found']);
    }
    expect((await invoke(t, surface, ws.token, 'list_hosts')).body.items).toEqual([]);
    expect((await invoke(t, surface, other.token, 'list_hosts')).body.items).toEqual([theirs]);
  });
});
