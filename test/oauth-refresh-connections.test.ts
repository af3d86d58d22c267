import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTokenSet } from '../src/core/servers/oauth-refresh.js';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';
import { expireSoon, headlessOAuthIdentity, storedTokenSet, type HeadlessOAuthIdentity } from './helpers/oauth-identities.js';
import { startOAuthServer, type OAuthUpstream } from './helpers/upstreams.js';

/** More identities than the Postgres pool has connections (10). */
const IDENTITIES = 12;
/** How long the test waits for every refresh to reach the token endpoint before it counts them. */
const REACH_WAIT_MS = 8_000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A refresh waits for the token endpoint with no store connection of its own: with more
 * identities refreshing at once than the pool has connections, and an authorization
 * server that does not answer yet, every refresh reaches it and the service still
 * answers its admins. (A refresh that held a connection while the endpoint answered
 * left the rest of the service waiting for one, then answering 503.)
 */
describe('OAuth refreshes and the store connections', () => {
  let t: TestApp;
  let ws: CreatedWorkspace;
  let upstream: OAuthUpstream;
  const identities: HeadlessOAuthIdentity['identity'][] = [];
  const refreshesAsked = () => upstream.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;

  beforeAll(async () => {
    [t, upstream] = await Promise.all([startTestApp(), startOAuthServer()]);
    ws = await newWorkspace(t);
    for (let i = 0; i < IDENTITIES; i++) identities.push((await headlessOAuthIdentity(t, ws, upstream, `refreshing-${i}`)).identity);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  it('holds none while the token endpoint answers: every refresh reaches it, the service answers meanwhile, each identity gets its tokens', async () => {
    const before = await Promise.all(identities.map((identity) => expireSoon(t, identity)));
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    upstream.beforeTokenAnswer = () => answered;
    const asked = refreshesAsked();
    const refreshes = identities.map((identity) => freshTokenSet(t.runtime.services, identity));
    try {
      for (const start = Date.now(); refreshesAsked() - asked < IDENTITIES && Date.now() - start < REACH_WAIT_MS;) await sleep(50);
      expect(refreshesAsked() - asked).toBe(IDENTITIES);
      const listed = await invoke(t, 'rest', ws.token, 'list_inbound_servers');
      expect(listed.status).toBe(200);
      expect(listed.body.items).toHaveLength(IDENTITIES);
    } finally {
      answer();
    }
    const refreshed = await Promise.all(refreshes);
    for (const [i, identity] of identities.entries()) {
      expect(refreshed[i]!.accessToken).not.toBe(before[i]!.accessToken);
      expect((await storedTokenSet(t, identity)).accessToken).toBe(refreshed[i]!.accessToken);
    }
    // The leases are given back: the next refresh of an identity is not kept waiting for one.
    const leased = await t.runtime.services.db.selectFrom('identities').select('guid').where('oauth_refresh_lease_until', 'is not', null).execute();
    expect(leased).toEqual([]);
    expect(refreshesAsked() - asked).toBe(IDENTITIES);
  });

  it('takes over the lease of a process that died while refreshing, once it runs out', async () => {
    upstream.beforeTokenAnswer = undefined;
    const identity = identities[0]!;
    const before = await expireSoon(t, identity);
    // A process took the lease and never gave it back (killed mid-refresh): it runs out in two seconds.
    const { db } = t.runtime.services;
    const leaseEnd = Date.now() + 2_000;
    await db
      .updateTable('identities')
      .set({ oauth_refresh_lease_until: new Date(leaseEnd) })
      .where('guid', '=', identity.guid)
      .execute();
    const asked = refreshesAsked();
    const refreshing = freshTokenSet(t.runtime.services, identity);
    await sleep(500);
    // Nothing was asked while the lease held (a machine that stalled past its end proves nothing here).
    if (Date.now() < leaseEnd) expect(refreshesAsked()).toBe(asked);
    const refreshed = await refreshing;
    expect(refreshed.accessToken).not.toBe(before.accessToken);
    expect(refreshesAsked()).toBe(asked + 1);
    const row = await db.selectFrom('identities').select('oauth_refresh_lease_until').where('guid', '=', identity.guid).executeTakeFirstOrThrow();
    expect(row.oauth_refresh_lease_until).toBeNull();
  });
});
