import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ConfigChanges } from '../src/core/config-changes.js';
import { newGuid } from '../src/core/ids.js';
import { CHANGE_CHANNEL, PgChangeRelay } from '../src/stores/pg-change-relay.js';
import { CapturedLog, invoke, newWorkspace, startTestApp, storeKind, type TestApp } from './helpers/harness.js';
import { gatewayClient, listenLoopback, registerServer, startReplica } from './helpers/gateway.js';
import { startEverything, type Upstream } from './helpers/upstreams.js';

describe('the configuration notice board', () => {
  it('tells local listeners and the relays of a change made here, and only local listeners of one heard from elsewhere', () => {
    const board = new ConfigChanges();
    const heard: string[] = [];
    const relayed: string[] = [];
    board.subscribe((org) => heard.push(org));
    const stop = board.relayTo((org) => relayed.push(org));
    board.changed('a');
    board.deliver('b');
    expect(heard).toEqual(['a', 'b']);
    expect(relayed).toEqual(['a']);
    stop();
    board.changed('c');
    expect(relayed).toEqual(['a']);
  });
});

/** Two service processes on one Postgres server: each has its own relay connection, as separate processes would. */
describe.skipIf(storeKind() !== 'postgres')('the change relay between processes (Postgres LISTEN/NOTIFY)', () => {
  const url = process.env.DATABASE_URL!;
  const relays: PgChangeRelay[] = [];
  const open = async (onNotice: (org: string) => void, logger = new CapturedLog()) => {
    const relay = await PgChangeRelay.open({ connectionString: url, onNotice, logger });
    relays.push(relay);
    return relay;
  };
  afterAll(async () => {
    for (const r of relays) await r.close();
  });

  it('delivers a notice to the other process once and not back to its sender', async () => {
    // Other test files' service processes share this database and channel: only this test's notices count.
    const sent: string[] = [];
    const heardByA: string[] = [];
    const heardByB: string[] = [];
    const a = await open((org) => sent.includes(org) && heardByA.push(org));
    await open((org) => sent.includes(org) && heardByB.push(org));
    const [first, second] = [newGuid(), newGuid()];
    sent.push(first, second);
    a.publish(first);
    await vi.waitFor(() => expect(heardByB).toEqual([first]), { timeout: 10_000, interval: 20 });
    // The sender's own notice came back on its connection too, and was dropped there.
    a.publish(second);
    await vi.waitFor(() => expect(heardByB).toEqual([first, second]), { timeout: 10_000, interval: 20 });
    expect(heardByA).toEqual([]);
  });

  it('listens again after its connection is cut, and hears later notices', async () => {
    const heard: string[] = [];
    const log = new CapturedLog();
    await open((org) => heard.push(org), log);
    const sender = await open(() => undefined);
    // Cut the listener's session from the server side, as a Postgres restart or a proxy would.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const cut = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()`, [
        `LISTEN ${CHANGE_CHANNEL}`,
      ]);
      expect(cut.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    await vi.waitFor(() => expect(log.text()).toMatch(/listening again/), { timeout: 15_000, interval: 50 });
    // The cut reached the sender's connection too (its last statement was the same LISTEN), and a
    // relay drops what it is asked to publish while it reconnects: publish until the listener hears it.
    const org = newGuid();
    await vi.waitFor(
      () => {
        sender.publish(org);
        expect(heard).toContain(org);
      },
      { timeout: 15_000, interval: 200 },
    );
  });

  describe('a gateway host connected to another replica', () => {
    let t: TestApp;
    let everything: Upstream;
    let replicaApp: FastifyInstance;
    let client: Client | undefined;
    beforeAll(async () => {
      [t, everything] = await Promise.all([startTestApp(), startEverything('streamableHttp')]);
      await listenLoopback(t);
    }, 120_000);
    afterAll(async () => {
      await client?.close().catch(() => undefined);
      await replicaApp?.close();
      await t?.close();
      await everything?.close();
    });

    it('is sent list_changed when the configuration changes through the first replica', async () => {
      const ws = await newWorkspace(t);
      const { serverGuid } = await registerServer(t, ws, { name: 'everything', url: everything.url, authType: 'none' });
      const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'relayed' });
      await invoke(t, 'rest', ws.token, 'assign_server_to_gateway', { gatewayGuid: gw.body.guid, inboundServerGuid: serverGuid });
      const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });

      // The second replica: its own notice board, fed only by its own relay connection.
      const board = new ConfigChanges();
      const relay = await open((org) => board.deliver(org));
      board.relayTo((org) => relay.publish(org));
      const replica = await startReplica({ ...t.runtime.services, configChanges: board });
      replicaApp = replica.app;
      const replicaUrl = `${replica.base}/gateways/${gw.body.guid}/mcp`;

      let listChanged = 0;
      client = await gatewayClient(replicaUrl, issued.body.token);
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        listChanged++;
      });
      expect((await client.listTools()).tools.map((x) => x.name)).toContain('everything__echo');
      // The host's event stream opens in the background: keep changing the workspace until a notice arrives.
      await vi.waitFor(
        async () => {
          await invoke(t, 'rest', ws.token, 'create_gateway', { name: `other-${newGuid().slice(-8)}` });
          expect(listChanged).toBeGreaterThan(0);
        },
        { timeout: 20_000, interval: 300 },
      );
    });
  });
});
