import { describe, expect, it } from 'vitest';
import { SessionIds, sealSession, type GatewaySession } from '../src/gateway/session-id.js';

const key = Buffer.alloc(32, 7);
const session = (clientInfo: GatewaySession['clientInfo'] = { name: 'host', version: '1' }): GatewaySession => ({
  id: 'abc',
  connectionGuid: 'c0000000-0000-4000-8000-000000000001',
  protocolVersion: '2025-06-18',
  clientCapabilities: {},
  clientInfo,
  upstreams: { a: { sessionId: 'up-1' } },
  createdAt: 1,
});

describe('remembered gateway session ids', () => {
  it('opens an id sealed by another replica once and then from memory, as one frozen session', () => {
    const id = sealSession(key, session());
    const ids = new SessionIds(key);
    const first = ids.open(id);
    expect(first).toEqual(session());
    expect(ids.open(id)).toBe(first);
    expect(Object.isFrozen(first!.upstreams.a)).toBe(true);
  });

  it('refuses an altered id and one sealed under another key', () => {
    const id = sealSession(key, session());
    const ids = new SessionIds(key);
    const altered = id.slice(0, -2) + (id.endsWith('AA') ? 'AB' : 'AA');
    expect(ids.open(altered)).toBeNull();
    expect(new SessionIds(Buffer.alloc(32, 8)).open(id)).toBeNull();
  });

  it('opens only the canonical encoding: padding or a stray character appended is another, unknown id', () => {
    const id = sealSession(key, session());
    const ids = new SessionIds(key);
    for (const variant of [`${id}==`, `${id}=`, `${id}.`, ` ${id}`]) expect(ids.open(variant)).toBeNull();
    expect(ids.open(id)).toEqual(session());
  });

  it('keeps no huge id in memory but still opens it', () => {
    const ids = new SessionIds(key);
    const big = session({ name: 'x'.repeat(10_000), version: '1' });
    const id = ids.seal(big);
    const opened = ids.open(id);
    expect(opened).toEqual(big);
    expect(ids.open(id)).not.toBe(opened);
  });
});
