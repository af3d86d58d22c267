import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { newMember } from './helpers/members.js';
import { startHeaderServer, startToolServer, type HeaderUpstream, type Upstream } from './helpers/upstreams.js';

/**
 * admin-api's state rules as a host meets them through a gateway (States and
 * transitions; Hosts and connections; Identities 2; Authentication 1): what a disabled
 * host or identity, a disabled or deleted server, an archived gateway (enabled or not),
 * a deactivated user and an expired gateway token do to the next request of a real MCP
 * client holding a gateway token, and that undoing the change serves it again.
 */
let t: TestApp;
let base: string;
let open: Upstream;
let keyed: HeaderUpstream;
let ws: CreatedWorkspace;
let openServer: string;
let keyedServer: string;
let keyedIdentity: string;
const KEY = 'state-rules-key-41c7';

beforeAll(async () => {
  [t, open, keyed] = await Promise.all([startTestApp(), startToolServer('plain'), startHeaderServer('X-Api-Key', KEY)]);
  base = await listenLoopback(t);
  ws = await newWorkspace(t);
  openServer = (await registerServer(t, ws, { name: 'plain', url: open.url, authType: 'none' })).serverGuid;
  const registered = await registerServer(t, ws, {
    name: 'keyed',
    url: keyed.url,
    authType: 'headers',
    headers: { 'X-Api-Key': KEY },
    accessControl: 'global',
  });
  keyedServer = registered.serverGuid;
  keyedIdentity = registered.identityGuid!;
}, 60_000);
afterAll(async () => {
  await closeClients();
  await t?.close();
  await open?.close();
  await keyed?.close();
});

const admin = (name: string, input: Record<string, unknown>, token = ws.token) => invoke(t, 'rest', token, name, input);

/** A gateway with `plain` (open) and `keyed` (shared identity) assigned, and a token for `token`'s user. */
async function gatewayWithToken(token = ws.token, body: Record<string, unknown> = {}) {
  const gw = await admin('create_gateway', { name: `State ${Math.random().toString(36).slice(2, 7)}` });
  await admin('assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: openServer });
  await admin('assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: keyedServer, sharedIdentityGuid: keyedIdentity });
  const issued = await admin('issue_gateway_token', { gatewayGuid: gw.body.guid, ...body }, token);
  expect(issued.status, JSON.stringify(issued.body)).toBe(201);
  return {
    gatewayGuid: gw.body.guid as string,
    tokenId: issued.body.tokenId as string,
    token: issued.body.token as string,
    url: issued.body.url.replace(t.config.publicBaseUrl, base) as string,
  };
}

/** What a fresh host with this token gets: the tool names it lists, or the refusal's text. */
async function reach(url: string, token: string): Promise<string[] | string> {
  try {
    const host = await gatewayClient(url, token);
    try {
      return (await host.listTools()).tools.map((x) => x.name).sort();
    } finally {
      await host.close().catch(() => undefined);
    }
  } catch (err) {
    return String(err);
  }
}

/** Every tool both servers offer, learned from the first host that reaches a fresh gateway. */
let BOTH: string[] = [];
const plainOnly = () => BOTH.filter((n) => n.startsWith('plain__'));

describe('state rules at the gateway', () => {
  beforeAll(async () => {
    const gw = await gatewayWithToken();
    BOTH = (await reach(gw.url, gw.token)) as string[];
    expect(BOTH).toEqual(expect.arrayContaining(['plain__whoami', 'keyed__whoami']));
  });

  it('a disabled host cuts off its connections; enabled again, they serve', async () => {
    const host = await admin('create_host', { name: 'Agent' });
    const gw = await gatewayWithToken(ws.token, { hostGuid: host.body.guid });
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);
    await admin('disable_host', { hostGuid: host.body.guid });
    expect(await reach(gw.url, gw.token)).toMatch(/host is disabled/);
    await admin('enable_host', { hostGuid: host.body.guid });
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);
  });

  it("deleting a disabled host leaves its connections cut off (disabled), not serving again unbound; an enabled host's go on", async () => {
    const host = await admin('create_host', { name: 'Retired agent' });
    const gw = await gatewayWithToken(ws.token, { hostGuid: host.body.guid });
    const connectionGuid = (await admin('list_connections', { hostGuid: host.body.guid })).body.items[0].guid;
    await admin('disable_host', { hostGuid: host.body.guid });
    expect(await reach(gw.url, gw.token)).toMatch(/host is disabled/);
    expect((await admin('delete_host', { hostGuid: host.body.guid })).status).toBe(200);
    expect((await admin('get_connection', { connectionGuid })).body).toMatchObject({ hostGuid: null, enabled: false });
    expect(await reach(gw.url, gw.token)).toMatch(/connection is disabled/);

    const kept = await admin('create_host', { name: 'Replaced agent' });
    const other = await gatewayWithToken(ws.token, { hostGuid: kept.body.guid });
    await admin('delete_host', { hostGuid: kept.body.guid });
    expect(await reach(other.url, other.token)).toEqual(BOTH);
  });

  it('an archived gateway serves nobody, even enabled; unarchived it stays disabled until enable_gateway', async () => {
    const gw = await gatewayWithToken();
    await admin('archive_gateway', { gatewayGuid: gw.gatewayGuid });
    expect(await reach(gw.url, gw.token)).toMatch(/archived/);
    expect((await admin('enable_gateway', { gatewayGuid: gw.gatewayGuid })).body.enabled).toBe(true);
    expect(await reach(gw.url, gw.token)).toMatch(/archived/);
    await admin('archive_gateway', { gatewayGuid: gw.gatewayGuid });
    const unarchived = await admin('unarchive_gateway', { gatewayGuid: gw.gatewayGuid });
    expect(unarchived.body).toMatchObject({ archived: false, enabled: false });
    expect(await reach(gw.url, gw.token)).toMatch(/disabled/);
    await admin('enable_gateway', { gatewayGuid: gw.gatewayGuid });
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);
  });

  it("a disabled server's and a disabled shared identity's tools are gone; a deleted server's assignments go inert", async () => {
    const gw = await gatewayWithToken();
    await admin('disable_identity', { identityGuid: keyedIdentity });
    expect(await reach(gw.url, gw.token)).toEqual(plainOnly());
    await admin('enable_identity', { identityGuid: keyedIdentity });
    await admin('disable_inbound_server', { inboundServerGuid: keyedServer });
    expect(await reach(gw.url, gw.token)).toEqual(plainOnly());
    await admin('enable_inbound_server', { inboundServerGuid: keyedServer });
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);

    const doomed = (await registerServer(t, ws, { name: 'doomed', url: open.url, authType: 'none' })).serverGuid;
    await admin('assign_server_to_gateway', { gatewayGuid: gw.gatewayGuid, inboundServerGuid: doomed });
    expect(await reach(gw.url, gw.token)).toContain('doomed__whoami');
    await admin('delete_inbound_server', { inboundServerGuid: doomed });
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);
    expect((await admin('list_gateway_assignments', { gatewayGuid: gw.gatewayGuid })).body.items).toHaveLength(3);
  });

  it("a deactivated user's gateway tokens fail on the next request", async () => {
    const member = await newMember(t, ws, ['createAndManageApiTokens']);
    const gw = await gatewayWithToken(member.token);
    expect(await reach(gw.url, gw.token)).toEqual(BOTH);
    expect((await admin('deactivate_user', { userGuid: member.userGuid })).status).toBe(200);
    expect(await reach(gw.url, gw.token)).toMatch(/valid gateway token is required/);
  });

  it('an expired gateway token fails like a revoked one', async () => {
    const gw = await gatewayWithToken();
    await t.runtime.services.db
      .updateTable('access_tokens')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', gw.tokenId)
      .execute();
    expect(await reach(gw.url, gw.token)).toMatch(/valid gateway token is required/);
  });
});
