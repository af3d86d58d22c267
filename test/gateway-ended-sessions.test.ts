import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndedSessions } from '../src/gateway/ended-sessions.js';
import type { GatewaySession } from '../src/gateway/session-id.js';
import { invoke, newWorkspace, startTestApp, type TestApp } from './helpers/harness.js';

/**
 * Sessions ended through one replica, as another one learns of them (docs/decisions.md,
 * "Ended sessions"): on the real store, with the reads of the replica that follows the
 * sessions counted.
 */
let t: TestApp;
let connectionGuid: string;

beforeAll(async () => {
  t = await startTestApp();
  const ws = await newWorkspace(t);
  const gw = await invoke(t, 'rest', ws.token, 'create_gateway', { name: 'Ended' });
  const issued = await invoke(t, 'rest', ws.token, 'issue_gateway_token', { gatewayGuid: gw.body.guid });
  connectionGuid = issued.body.connectionGuid;
}, 120_000);
afterAll(() => t?.close());

const session = (): GatewaySession => ({
  id: randomBytes(8).toString('hex'),
  connectionGuid,
  protocolVersion: '2025-06-18',
  clientCapabilities: {},
  clientInfo: { name: 'host', version: '1' },
  upstreams: {},
  createdAt: Date.now(),
});

describe('ended sessions across replicas', () => {
  it('reads the store once a TTL for all the sessions a replica follows, and refuses an end stored by another replica within it', async () => {
    const ttlMs = 1_000;
    let reads = 0;
    const counting: KyselyPlugin = {
      transformQuery(args) {
        if (args.node.kind === 'SelectQueryNode') reads++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const { db, logger } = t.runtime.services;
    const replica = new EndedSessions(db.withPlugin(counting), logger, ttlMs);
    const other = new EndedSessions(db, logger, ttlMs);
    const sessions = Array.from({ length: 10 }, session);
    for (const s of sessions) expect(await replica.isOver(s)).toBe(false);
    const seen = reads;
    await other.end(sessions[3]!);
    await sleep(ttlMs + 100);
    const verdicts = [];
    for (const s of sessions) verdicts.push(await replica.isOver(s));
    expect(verdicts).toEqual(sessions.map((_, i) => i === 3));
    // One read of the ends since the last one, not one per session.
    expect(reads - seen).toBe(1);
    // A session not seen before is still asked for at once.
    const unseen = session();
    await other.end(unseen);
    expect(await replica.isOver(unseen)).toBe(true);
  });
});
