import { describe, expect, it } from 'vitest';
import { PerSessionStore, sessionKeyOf } from '../src/gateway/session-store.js';

const session = (id: string) => ({ connectionGuid: 'c1', id, createdAt: Date.now() });

describe('what a process keeps for 2025 sessions', () => {
  it('forgets the session set longest ago to make room', () => {
    const store = new PerSessionStore<number>(2);
    expect(store.set(session('a'), 1)).toBe(true);
    expect(store.set(session('b'), 2)).toBe(true);
    expect(store.set(session('c'), 3)).toBe(true);
    expect([store.get(session('a')), store.get(session('b')), store.get(session('c'))]).toEqual([undefined, 2, 3]);
  });

  it('never forgets a pinned session to make room, and keeps nothing new when every session is pinned', () => {
    const pinned = new Set([sessionKeyOf(session('a'))]);
    const store = new PerSessionStore<number>(2, (key) => pinned.has(key));
    store.set(session('a'), 1);
    store.set(session('b'), 2);
    expect(store.set(session('c'), 3)).toBe(true);
    expect([store.get(session('a')), store.get(session('b')), store.get(session('c'))]).toEqual([1, undefined, 3]);
    pinned.add(sessionKeyOf(session('c')));
    expect(store.set(session('d'), 4)).toBe(false);
    expect(store.get(session('d'))).toBeUndefined();
    // A pinned session's own value can still change.
    expect(store.set(session('a'), 5)).toBe(true);
    expect(store.get(session('a'))).toBe(5);
  });

  it("keeps a value for at most the session's life, and forgets it when told", () => {
    const store = new PerSessionStore<number>(10);
    store.set({ connectionGuid: 'c1', id: 'old', createdAt: 0 }, 1);
    expect(store.get({ connectionGuid: 'c1', id: 'old' })).toBeUndefined();
    store.set(session('x'), 2);
    store.forget(session('x'));
    expect(store.get(session('x'))).toBeUndefined();
    // Sessions of another connection are others.
    store.set(session('y'), 3);
    expect(store.get({ connectionGuid: 'c2', id: 'y' })).toBeUndefined();
  });
});
