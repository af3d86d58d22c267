import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertNeverLeaked, closeClients, invoke, newWorkspace, SURFACES, startTestApp, type TestApp } from './helpers/harness.js';
import { newMember, type Member } from './helpers/members.js';
import { captureAlerts, validated } from './helpers/servers.js';
import { startEverything, startHeaderServer, type HeaderUpstream, type Upstream } from './helpers/upstreams.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';

let t: TestApp;
let ws: CreatedWorkspace;
let other: CreatedWorkspace;
let colleague: Member;
let headerServer: HeaderUpstream;
let everything: Upstream;
const SECRET = 'identity-secret-81d3c0';
const NEW_SECRET = 'identity-secret-rotated-44aa';
const responses: unknown[] = [];
const ALL_IDENTITY_CAPS = ['viewAllServers', 'accessAllIdentities', 'identityManagement'];

beforeAll(async () => {
  [t, headerServer, everything] = await Promise.all([
    startTestApp(),
    startHeaderServer('Authorization', `Bearer ${NEW_SECRET}`),
    startEverything('streamableHttp'),
  ]);
  ws = await newWorkspace(t);
  other = await newWorkspace(t);
  colleague = await newMember(t, ws, ALL_IDENTITY_CAPS);
  captureAlerts(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
  await Promise.all([headerServer?.close(), everything?.close()]);
});

type Surface = (typeof SURFACES)[number];
const call = async (surface: Surface, token: string, name: string, input: Record<string, unknown> = {}) => {
  const res = await invoke(t, surface, token, name, input);
  responses.push(res.body);
  return res;
};

async function headersServer(surface: Surface, accessControl?: 'private' | 'global') {
  const { body } = await call(surface, ws.token, 'create_inbound_server', {
    name: 'srv',
    url: headerServer.url,
    authType: 'headers',
    headers: { Authorization: `Bearer ${SECRET}` },
    ...(accessControl ? { accessControl } : {}),
  });
  await validated(t, body.guid);
  const [identity] = (await call(surface, ws.token, 'list_identities', { inboundServerGuid: body.guid })).body.items;
  return { server: body, identity };
}

describe.each(SURFACES)('identities on %s', (surface) => {
  it('a private identity exists only for its creator: 404 everywhere for everyone else', async () => {
    const { server, identity } = await headersServer(surface);
    expect(identity.accessControl).toBe('private');
    expect((await call(surface, colleague.token, 'list_identities', { inboundServerGuid: server.guid })).body).toEqual({ items: [] });
    for (const [name, extra] of [
      ['enable_identity', {}],
      ['disable_identity', {}],
      ['delete_identity', {}],
      ['set_identity_availability', { availability: 'global' }],
      ['set_identity_headers', { headers: { a: 'b' } }],
    ] as const) {
      const res = await call(surface, colleague.token, name, { identityGuid: identity.guid, ...extra });
      expect(res.status, name).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([identity]);
  });

  it('a global identity is visible to all, but availability and headers stay creator-only (403 not_creator)', async () => {
    const { server, identity } = await headersServer(surface, 'global');
    expect(identity.accessControl).toBe('global');
    expect((await call(surface, colleague.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([identity]);
    for (const [name, extra] of [
      ['set_identity_availability', { availability: 'private' }],
      ['set_identity_headers', { headers: { Authorization: 'Bearer x' } }],
    ] as const) {
      const res = await call(surface, colleague.token, name, { identityGuid: identity.guid, ...extra });
      expect(res.status, name).toBe(403);
      expect(res.body.code).toBe('not_creator');
    }
    // Enabling and disabling are not creator-only; both save only on change.
    expect((await call(surface, colleague.token, 'disable_identity', { identityGuid: identity.guid })).body).toEqual({ ...identity, enabled: false });
    expect((await call(surface, colleague.token, 'disable_identity', { identityGuid: identity.guid })).body.enabled).toBe(false);
    expect((await call(surface, colleague.token, 'enable_identity', { identityGuid: identity.guid })).body.enabled).toBe(true);
    expect((await call(surface, colleague.token, 'enable_identity', { identityGuid: identity.guid })).body.enabled).toBe(true);
  });

  it('set_identity_availability switches private and global for the creator, saving only on change', async () => {
    const { server, identity } = await headersServer(surface);
    expect((await call(surface, ws.token, 'set_identity_availability', { identityGuid: identity.guid, availability: 'global' })).body).toEqual({
      ...identity,
      accessControl: 'global',
    });
    expect((await call(surface, colleague.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toHaveLength(1);
    expect((await call(surface, ws.token, 'set_identity_availability', { identityGuid: identity.guid, availability: 'global' })).body.accessControl).toBe(
      'global',
    );
    expect((await call(surface, ws.token, 'set_identity_availability', { identityGuid: identity.guid, availability: 'private' })).body.accessControl).toBe(
      'private',
    );
    expect((await call(surface, colleague.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toHaveLength(0);
    const bad = await call(surface, ws.token, 'set_identity_availability', { identityGuid: identity.guid, availability: 'public' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].path).toBe('availability');
  });

  it('set_identity_headers replaces the whole set, drops svc- and empty entries, and revalidates with it', async () => {
    const { server, identity } = await headersServer(surface);
    // The header server wants NEW_SECRET, so the first credential was refused.
    expect((await validated(t, server.guid)).authentication_status).toBe('unsupported');
    const res = await call(surface, ws.token, 'set_identity_headers', {
      identityGuid: identity.guid,
      headers: { Authorization: `Bearer ${NEW_SECRET}`, 'svc-trace': 'x', 'X-Blank': '' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(identity);
    expect((await validated(t, server.guid)).authentication_status).toBe('authenticated');
    const stored = await t.runtime.services.db.selectFrom('identities').select('header_names').where('guid', '=', identity.guid).executeTakeFirstOrThrow();
    expect(stored.header_names).toEqual(['Authorization']);
    const empty = await call(surface, ws.token, 'set_identity_headers', { identityGuid: identity.guid, headers: { 'svc-x': 'y', A: '' } });
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].path).toBe('headers');
    const missing = await call(surface, ws.token, 'set_identity_headers', { identityGuid: identity.guid });
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].path).toBe('headers');
  });

  it('add_identity: label and access control defaults, custom label, and the rules per server type', async () => {
    const { server } = await headersServer(surface);
    const added = await call(surface, ws.token, 'add_identity', { inboundServerGuid: server.guid, headers: { Authorization: `Bearer ${NEW_SECRET}` } });
    expect(added.status).toBe(surface === 'rest' ? 201 : 200);
    expect(added.body).toEqual({ guid: expect.any(String), name: 'srv Identity', enabled: true, accessControl: 'private', inboundServerGuid: server.guid });
    expect((await validated(t, server.guid)).authentication_status).toBe('authenticated');
    const labelled = await call(surface, ws.token, 'add_identity', {
      inboundServerGuid: server.guid,
      headers: { Authorization: 'Bearer y' },
      identityLabel: 'Team key',
      accessControl: 'global',
    });
    expect(labelled.body).toMatchObject({ name: 'Team key', accessControl: 'global' });
    // An authenticated server keeps its status when a further credential is refused.
    expect((await validated(t, server.guid)).authentication_status).toBe('authenticated');

    const oauthOnHeaders = await call(surface, ws.token, 'add_identity', {
      inboundServerGuid: server.guid,
      oauthAccessToken: 'tok',
      oauthClientId: 'c',
      oauthTokenEndpoint: 'http://127.0.0.1:1/token',
    });
    expect(oauthOnHeaders.status).toBe(409);
    expect(oauthOnHeaders.body.code).toBe('conflict');
    const noHeaders = await call(surface, ws.token, 'add_identity', { inboundServerGuid: server.guid });
    expect(noHeaders.status).toBe(400);
    expect(noHeaders.body.errors[0].path).toBe('headers');

    const { body: open } = await call(surface, ws.token, 'create_inbound_server', { name: 'open', url: everything.url, authType: 'none' });
    await validated(t, open.guid);
    const onOpen = await call(surface, ws.token, 'add_identity', { inboundServerGuid: open.guid, headers: { a: 'b' } });
    expect(onOpen.status).toBe(409);
    expect((await call(surface, ws.token, 'add_identity', { inboundServerGuid: '00000000-0000-7000-8000-000000000000', headers: { a: 'b' } })).status).toBe(
      404,
    );
  });

  it('delete_identity removes the identity but leaves its encrypted credential', async () => {
    const { server, identity } = await headersServer(surface);
    const db = t.runtime.services.db;
    const { secret_guid } = await db.selectFrom('identities').select('secret_guid').where('guid', '=', identity.guid).executeTakeFirstOrThrow();
    expect((await call(surface, ws.token, 'delete_identity', { identityGuid: identity.guid })).body).toEqual({ deleted: true, identityGuid: identity.guid });
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([]);
    expect((await call(surface, ws.token, 'delete_identity', { identityGuid: identity.guid })).status).toBe(404);
    const secret = await db.selectFrom('secrets').selectAll().where('guid', '=', secret_guid!).executeTakeFirstOrThrow();
    expect(secret.organization_guid).toBe(ws.organizationGuid);
    expect(secret.ciphertext.toString('utf8')).not.toContain(SECRET);
  });

  it('keeps identities to their workspace', async () => {
    const { server, identity } = await headersServer(surface, 'global');
    for (const [name, extra] of [
      ['enable_identity', {}],
      ['disable_identity', {}],
      ['delete_identity', {}],
      ['set_identity_availability', { availability: 'private' }],
      ['set_identity_headers', { headers: { a: 'b' } }],
    ] as const) {
      expect((await call(surface, other.token, name, { identityGuid: identity.guid, ...extra })).status, name).toBe(404);
    }
    expect((await call(surface, other.token, 'list_identities', { inboundServerGuid: server.guid })).status).toBe(404);
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: server.guid })).body.items).toEqual([identity]);
  });
});

describe('secrets', () => {
  it('never appear in a response, a log line or an alert, and are stored encrypted', async () => {
    assertNeverLeaked(t, [SECRET, NEW_SECRET], responses);
    const rows = await t.runtime.services.db.selectFrom('secrets').select(['ciphertext', 'key_id']).execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.ciphertext.toString('latin1')).not.toContain('identity-secret');
  });
});
