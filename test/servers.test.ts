import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../src/core/egress.js';
import { closeClients, invoke, newWorkspace, SURFACES, startTestApp, assertNeverLeaked, type TestApp } from './helpers/harness.js';
import { newMember } from './helpers/members.js';
import { captureAlerts, validated } from './helpers/servers.js';
import { startEverything, startHeaderServer, startSilentServer, type HeaderUpstream, type Upstream } from './helpers/upstreams.js';
import type { NewAlert } from '../src/core/alerts.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';

let t: TestApp;
let ws: CreatedWorkspace;
let other: CreatedWorkspace;
let everythingHttp: Upstream;
let everythingSse: Upstream;
let headerServer: HeaderUpstream;
let silent: Upstream;
let alerts: NewAlert[];
const SECRET = 'hdr-secret-value-5f2c9a';
const responses: unknown[] = [];

beforeAll(async () => {
  [t, everythingHttp, everythingSse, headerServer, silent] = await Promise.all([
    startTestApp({ SERVER_VALIDATION_TIMEOUT_MS: '3000' }),
    startEverything('streamableHttp'),
    startEverything('sse'),
    startHeaderServer('X-Api-Key', SECRET),
    startSilentServer(),
  ]);
  ws = await newWorkspace(t);
  other = await newWorkspace(t);
  alerts = captureAlerts(t);
});
afterAll(async () => {
  await closeClients();
  await t?.close();
  await Promise.all([everythingHttp, everythingSse, headerServer, silent].map((u) => u?.close()));
});

const call = async (surface: (typeof SURFACES)[number], token: string, name: string, input: Record<string, unknown> = {}) => {
  const res = await invoke(t, surface, token, name, input);
  responses.push(res.body);
  return res;
};

describe.each(SURFACES)('inbound servers on %s', (surface) => {
  it('registers an open server on Streamable HTTP: status open, no identity, tools discovered', async () => {
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'everything',
      url: everythingHttp.url,
      authType: 'none',
      accessControl: 'global',
    });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body).toEqual({
      guid: expect.any(String),
      name: 'everything',
      url: everythingHttp.url,
      enabled: true,
      authenticationType: 'none',
      authenticationStatus: 'open',
    });
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('open');
    expect(row.validation_due_at).toBeNull();
    const features = row.features as { transport: string; tools: { name: string }[]; prompts: unknown[]; resources: unknown[] };
    expect(features.transport).toBe('streamable-http');
    expect(features.tools.map((x) => x.name)).toContain('echo');
    expect(features.prompts.length).toBeGreaterThan(0);
    expect(features.resources.length).toBeGreaterThan(0);
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: res.body.guid })).body).toEqual({ items: [] });
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: res.body.guid })).body.authenticationStatus).toBe('open');
  });

  it('falls back to SSE for a server that speaks only SSE', async () => {
    const res = await call(surface, ws.token, 'create_inbound_server', { name: 'everything-sse', url: everythingSse.url, authType: 'none' });
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('open');
    expect((row.features as { transport: string }).transport).toBe('sse');
    expect((row.features as { tools: unknown[] }).tools.length).toBeGreaterThan(5);
  });

  it('validates a headers server with its headers (svc- and empty entries dropped) and authenticates it', async () => {
    const before = headerServer.seenHeaderNames.length;
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'hdr',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET, 'svc-internal': 'dropped-value', 'X-Empty': '' },
    });
    expect(res.status).toBe(surface === 'rest' ? 201 : 200);
    expect(res.body.authenticationStatus).toBe('needs-authentication');
    expect(res.body.authenticationType).toBe('headers');
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('authenticated');
    expect((row.features as { tools: { name: string }[] }).tools.map((x) => x.name)).toEqual(['whoami']);
    const sent = headerServer.seenHeaderNames.slice(before).flat();
    expect(sent).toContain('x-api-key');
    expect(sent).not.toContain('svc-internal');
    expect(sent).not.toContain('x-empty');
    const identities = (await call(surface, ws.token, 'list_identities', { inboundServerGuid: res.body.guid })).body.items;
    expect(identities).toEqual([{ guid: expect.any(String), name: 'hdr Identity', enabled: true, accessControl: 'private', inboundServerGuid: res.body.guid }]);
    const stored = await t.runtime.services.db.selectFrom('identities').select('header_names').where('guid', '=', identities[0].guid).executeTakeFirstOrThrow();
    expect(stored.header_names).toEqual(['X-Api-Key']);
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: res.body.guid })).body.authenticationStatus).toBe('authenticated');
  });

  it('marks a server whose credential is refused unsupported, with a redacted alert; a good identity then authenticates it', async () => {
    const wrong = `wrong-${SECRET}`;
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'hdr-bad',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': wrong },
      identityLabel: 'Bad key',
    });
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('unsupported');
    expect(row.status_reason).toMatch(/401/);
    const alert = alerts.find((a) => a.relatedResourceIds?.includes(res.body.guid));
    expect(alert).toMatchObject({ code: 'server_validation_failed', messageType: 'error', organizationGuid: ws.organizationGuid });
    expect(JSON.stringify(alert)).not.toContain(wrong);
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: res.body.guid })).body.authenticationStatus).toBe('unsupported');

    const added = await call(surface, ws.token, 'add_identity', {
      inboundServerGuid: res.body.guid,
      headers: { 'X-Api-Key': SECRET },
      accessControl: 'global',
    });
    expect(added.status).toBe(surface === 'rest' ? 201 : 200);
    expect(added.body).toEqual({
      guid: expect.any(String),
      name: 'hdr-bad Identity',
      enabled: true,
      accessControl: 'global',
      inboundServerGuid: res.body.guid,
    });
    expect((await validated(t, res.body.guid)).authentication_status).toBe('authenticated');
    assertNeverLeaked(t, [wrong, SECRET], [...responses, ...alerts]);
  });

  it('times out a server that never answers and marks it unsupported', async () => {
    const res = await call(surface, ws.token, 'create_inbound_server', {
      name: 'silent',
      url: silent.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET },
    });
    const row = await validated(t, res.body.guid);
    expect(row.authentication_status).toBe('unsupported');
    expect(row.status_reason).toMatch(/timed out/);
  });

  it('renames, enables and disables, saving only on change', async () => {
    const { body: s } = await call(surface, ws.token, 'create_inbound_server', { name: 'r1', url: everythingHttp.url, authType: 'none' });
    await validated(t, s.guid);
    expect((await call(surface, ws.token, 'rename_inbound_server', { inboundServerGuid: s.guid, newName: 'r2' })).body).toMatchObject({
      guid: s.guid,
      name: 'r2',
    });
    expect((await call(surface, ws.token, 'rename_inbound_server', { inboundServerGuid: s.guid, newName: 'r2' })).body.name).toBe('r2');
    expect((await call(surface, ws.token, 'enable_inbound_server', { inboundServerGuid: s.guid })).body.enabled).toBe(true);
    expect((await call(surface, ws.token, 'disable_inbound_server', { inboundServerGuid: s.guid })).body.enabled).toBe(false);
    const again = await call(surface, ws.token, 'disable_inbound_server', { inboundServerGuid: s.guid });
    expect(again.status).toBe(200);
    expect(again.body.enabled).toBe(false);
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: s.guid })).body).toMatchObject({ name: 'r2', enabled: false });
    expect((await call(surface, ws.token, 'enable_inbound_server', { inboundServerGuid: s.guid })).body.enabled).toBe(true);
    expect((await call(surface, ws.token, 'rename_inbound_server', { inboundServerGuid: s.guid, newName: '  ' })).status).toBe(400);
  });

  it('deletes softly: gone from the interface, identities and their secrets stay', async () => {
    const { body: s } = await call(surface, ws.token, 'create_inbound_server', {
      name: 'del',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET },
    });
    await validated(t, s.guid);
    const res = await call(surface, ws.token, 'delete_inbound_server', { inboundServerGuid: s.guid });
    expect(res.body).toEqual({ deleted: true, inboundServerGuid: s.guid });
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: s.guid })).status).toBe(404);
    expect((await call(surface, ws.token, 'delete_inbound_server', { inboundServerGuid: s.guid })).status).toBe(404);
    expect((await call(surface, ws.token, 'list_inbound_servers')).body.items.map((x: { guid: string }) => x.guid)).not.toContain(s.guid);
    const db = t.runtime.services.db;
    const row = await db.selectFrom('inbound_servers').select('deleted_at').where('guid', '=', s.guid).executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();
    const ids = await db.selectFrom('identities').select(['guid', 'secret_guid']).where('inbound_server_guid', '=', s.guid).execute();
    expect(ids).toHaveLength(1);
    expect(await db.selectFrom('secrets').select('guid').where('guid', '=', ids[0]!.secret_guid!).executeTakeFirst()).toBeDefined();
    // The identity itself is still reachable until removed explicitly, and list_identities still finds it (nothing else would).
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: s.guid })).body.items).toEqual([
      expect.objectContaining({ guid: ids[0]!.guid, inboundServerGuid: s.guid }),
    ]);
    expect((await call(surface, ws.token, 'disable_identity', { identityGuid: ids[0]!.guid })).body.enabled).toBe(false);
    expect((await call(surface, ws.token, 'delete_identity', { identityGuid: ids[0]!.guid })).status).toBe(200);
    expect((await call(surface, ws.token, 'list_identities', { inboundServerGuid: s.guid })).body.items).toEqual([]);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const bad = async (input: Record<string, unknown>, field: string) => {
      const res = await call(surface, ws.token, 'create_inbound_server', { name: 'x', url: everythingHttp.url, authType: 'none', ...input });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
    };
    await bad({ url: 'not a url' }, 'url');
    await bad({ url: 'ftp://127.0.0.1/x' }, 'url');
    await bad({ url: 'http://169.254.169.254/latest' }, 'url');
    await bad({ url: 'http://10.1.2.3/mcp' }, 'url');
    await bad({ url: 'http://user:url-password@127.0.0.1/mcp' }, 'url');
    await bad({ authType: 'headers' }, 'headers');
    await bad({ authType: 'headers', headers: { 'svc-only': 'x', Empty: '' } }, 'headers');
    await bad({ authType: 'headers', headers: { 'bad name': 'x' } }, 'headers.bad…');
    // Header maps follow one rule, an identity's as a collector's: headers the exchange owns, a name twice, control characters, more than 32.
    await bad({ authType: 'headers', headers: { a: 'b', Host: 'elsewhere.example' } }, 'headers.Host');
    await bad({ authType: 'headers', headers: { 'X-Key': 'b', 'x-key': 'c' } }, 'headers.x-key');
    await bad({ authType: 'headers', headers: { 'X-Key': 'one\u0001two' } }, 'headers.X-Key');
    // A character beyond Latin-1 cannot be sent in a header (it was stored, then every exchange failed).
    await bad({ authType: 'headers', headers: { 'X-Key': 'v\u{1F600}' } }, 'headers.X-Key');
    await bad({ authType: 'headers', headers: { 'X-Key': 'caf\u00e9 \u2014 dash' } }, 'headers.X-Key');
    // A value of spaces alone is empty: with nothing else, no header is left.
    await bad({ authType: 'headers', headers: { 'X-Key': '   ' } }, 'headers');
    await bad({ authType: 'headers', headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers');
    await bad({ authType: 'none', headers: { a: 'b' } }, 'headers');
    await bad({ authType: 'headers', headers: { a: 'b' }, oauthAccessToken: 'tok' }, 'oauthAccessToken');
    await bad({ authType: 'oauth', oauthAccessToken: 'tok' }, 'oauthClientId');
    await bad({ authType: 'oauth', oauthAccessToken: 'tok' }, 'oauthTokenEndpoint');
    await bad({ authType: 'oauth', oauthAccessToken: 'tok', oauthClientId: 'c', oauthTokenEndpoint: 'http://169.254.169.254/token' }, 'oauthTokenEndpoint');
    await bad({ authType: 'oauth', headers: { a: 'b' } }, 'headers');
    await bad({ authType: 'oauth', oauthRefreshToken: 'r' }, 'oauthRefreshToken');
    await bad({ authType: 'basic' }, 'authType');
    await bad({ accessControl: 'public' }, 'accessControl');
    await bad({ oauthExpiresAt: 'soon' }, 'oauthExpiresAt');
    await bad({ name: '' }, 'name');
  });

  it('keeps servers to their workspace', async () => {
    const { body: s } = await call(surface, ws.token, 'create_inbound_server', {
      name: 'iso',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET },
    });
    await validated(t, s.guid);
    expect((await call(surface, other.token, 'list_inbound_servers')).body.items.map((x: { guid: string }) => x.guid)).not.toContain(s.guid);
    for (const [name, extra] of [
      ['get_inbound_server', {}],
      ['rename_inbound_server', { newName: 'stolen' }],
      ['enable_inbound_server', {}],
      ['disable_inbound_server', {}],
      ['delete_inbound_server', {}],
      ['list_identities', {}],
      ['add_identity', { headers: { 'X-Api-Key': 'x' } }],
    ] as const) {
      const res = await call(surface, other.token, name, { inboundServerGuid: s.guid, ...extra });
      expect(res.status, name).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    const ids = (await call(surface, ws.token, 'list_identities', { inboundServerGuid: s.guid })).body.items;
    for (const name of ['enable_identity', 'disable_identity', 'delete_identity']) {
      expect((await call(surface, other.token, name, { identityGuid: ids[0].guid })).status, name).toBe(404);
    }
    expect((await call(surface, ws.token, 'get_inbound_server', { inboundServerGuid: s.guid })).body).toMatchObject({ name: 'iso', enabled: true });
  });

  it('gates each operation by its capability', async () => {
    const viewer = await newMember(t, ws, ['viewAllServers']);
    expect((await call(surface, viewer.token, 'list_inbound_servers')).status).toBe(200);
    const res = await call(surface, viewer.token, 'create_inbound_server', { name: 'x', url: everythingHttp.url, authType: 'none' });
    expect(res.body).toMatchObject({ code: 'missing_capability', capability: 'basicServerManagement' });
  });
});

describe('validation jobs', () => {
  it('survive a restart: a server left pending is validated when the runner starts again', async () => {
    const jobs = t.runtime.serverValidation;
    await jobs.stop();
    const { body: s } = await call('rest', ws.token, 'create_inbound_server', {
      name: 'pending',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET },
    });
    const pending = await validated(t, s.guid);
    expect(pending.authentication_status).toBe('needs-authentication');
    expect(pending.validation_due_at).not.toBeNull();
    jobs.start();
    await jobs.pollDue();
    const done = await validated(t, s.guid);
    expect(done.authentication_status).toBe('authenticated');
    expect(done.validation_due_at).toBeNull();
  });

  it('checks egress again at connect time', async () => {
    const { body: s } = await call('rest', ws.token, 'create_inbound_server', {
      name: 'egress',
      url: headerServer.url,
      authType: 'headers',
      headers: { 'X-Api-Key': SECRET },
    });
    expect((await validated(t, s.guid)).authentication_status).toBe('authenticated');
    const [identity] = (await call('rest', ws.token, 'list_identities', { inboundServerGuid: s.guid })).body.items;
    const services = t.runtime.services;
    const allowed = services.egress;
    const seen = headerServer.seenHeaderNames.length;
    services.egress = new EgressPolicy([]);
    try {
      expect((await call('rest', ws.token, 'set_identity_headers', { identityGuid: identity.guid, headers: { 'X-Api-Key': SECRET } })).status).toBe(200);
      const row = await validated(t, s.guid);
      // The server keeps the status it earned; the refused credential is reported by the alert.
      expect(row.authentication_status).toBe('authenticated');
      expect(row.status_reason).toMatch(/EGRESS_ALLOWED_CIDRS/);
      expect(headerServer.seenHeaderNames.length).toBe(seen);
      expect(alerts.filter((a) => a.relatedResourceIds?.includes(s.guid)).map((a) => a.code)).toEqual(['server_validation_failed']);
    } finally {
      services.egress = allowed;
    }
  });

  it('never logged or answered a secret', () => {
    assertNeverLeaked(t, [SECRET, 'dropped-value'], [...responses, ...alerts]);
  });
});
