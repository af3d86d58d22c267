import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClients, invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer } from './helpers/gateway.js';
import { newMember } from './helpers/members.js';
import { startHeaderServer, type HeaderUpstream } from './helpers/upstreams.js';

/**
 * "accessControl private means only the creator may use it" (admin-api, Identities 2),
 * also after the fact: a colleague who chose a global identity for a connection stops
 * using it through the gateway once its creator makes it private, and the creator's
 * own connection goes on. Real peers on 127.0.0.1: a headers upstream that refuses any
 * other key, the 1.x SDK client as the host.
 */
let t: TestApp;
let upstream: HeaderUpstream;
let base: string;
const KEY = 'private-identity-key-5b2e91';
const hosts: Client[] = [];

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestApp(), startHeaderServer('X-Api-Key', KEY)]);
  base = await listenLoopback(t);
}, 60_000);
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close().catch(() => undefined)));
  await closeClients();
  await t?.close();
  await upstream?.close();
});

describe('a private identity at the gateway', () => {
  it("serves its creator's connections only, from the moment it is made private", async () => {
    const ws = await newWorkspace(t);
    const colleague = await newMember(t, ws, ['createAndManageApiTokens']);
    const { serverGuid, identityGuid } = await registerServer(t, ws, {
      name: 'Keys',
      url: upstream.url,
      authType: 'headers',
      headers: { 'X-Api-Key': KEY },
      accessControl: 'global',
    });
    const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Keyed' });
    await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid, identityScheme: 'userIdentity' });
    const connect = async (token: string) => {
      const issued = await invoke(t, 'rest', token, 'issue_gateway_token', { gatewayGuid: gw.body.guid, serverIdentities: { [serverGuid]: identityGuid } });
      expect(issued.status, JSON.stringify(issued.body)).toBe(201);
      const host = await gatewayClient(issued.body.url.replace(t.config.publicBaseUrl, base), issued.body.token);
      hosts.push(host);
      return host;
    };
    const creatorHost = await connect(ws.token);
    const colleagueHost = await connect(colleague.token);
    const whoami = (host: Client) => host.callTool({ name: 'keys__whoami', arguments: {} });
    expect((await whoami(colleagueHost)).isError).toBeFalsy();

    const made = await invoke(t, 'rest', ws.token, 'set_identity_availability', { identityGuid, availability: 'private' });
    expect(made.body.accessControl).toBe('private');
    await expect(whoami(colleagueHost)).rejects.toThrow('the identity chosen for Keys is private to its creator');
    expect((await colleagueHost.listTools()).tools.map((x) => x.name)).not.toContain('keys__whoami');
    expect((await whoami(creatorHost)).isError).toBeFalsy();

    // Global again, the colleague's connection serves again.
    await invoke(t, 'rest', ws.token, 'set_identity_availability', { identityGuid, availability: 'global' });
    expect((await whoami(colleagueHost)).isError).toBeFalsy();
  });
});
