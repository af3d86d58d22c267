import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/core/workspaces.js';
import { invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';

/**
 * A Postgres server dropping the service's connections (what a restart or a failover
 * does to them) is routine: the process survives, and the next requests are served
 * on new connections. Runs against the Postgres server only.
 */
describe.runIf(storeKind() === 'postgres')('the Postgres server drops every connection', () => {
  let t: TestApp;
  let ws: CreatedWorkspace;
  // Only this app's connections are dropped: other test files share the database.
  const applicationName = `outage-${Math.random().toString(36).slice(2, 10)}`;
  beforeAll(async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('application_name', applicationName);
    t = await startTestApp({ DATABASE_URL: url.toString() });
    ws = await newWorkspace(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('leaves the process running and serving: pooled and LISTEN connections are replaced', async () => {
    // Open several pooled connections, then let them sit idle; and hold one checked out between two statements of a
    // transaction (its client, not the pool, then hears of the termination).
    await Promise.all(Array.from({ length: 5 }, () => invoke(t, 'rest', ws.token, 'list_teams', {})));
    let terminated!: () => void;
    const afterTermination = new Promise<void>((resolve) => (terminated = resolve));
    const held = t.runtime.services.db
      .transaction()
      .execute(async (trx) => {
        await trx.selectFrom('teams').select('guid').limit(1).execute();
        await afterTermination;
        await trx.selectFrom('teams').select('guid').limit(1).execute();
      })
      .then(
        () => 'committed',
        () => 'failed',
      );
    await new Promise((r) => setTimeout(r, 100));
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const { rows } = await admin.query('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [
      applicationName,
    ]);
    await admin.end();
    expect(rows[0].n).toBeGreaterThan(0);
    // The idle clients' errors arrive asynchronously: give them time to be emitted (an unhandled one would end this worker).
    await new Promise((r) => setTimeout(r, 500));
    terminated();
    expect(await held).toBe('failed');
    expect(t.log.text()).toMatch(/pooled connection was dropped/);
    const created = await invoke(t, 'rest', ws.token, 'create_team', { name: 'after the outage' });
    expect(created.status).toBe(201);
    expect((await invoke(t, 'mcp', ws.token, 'list_teams', {})).body.items.map((x: any) => x.name)).toContain('after the outage');
  });
});
