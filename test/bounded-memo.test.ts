import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../src/core/bounded-memo.js';

/** The memo of answers keyed by what a host sent (the gateway's envelope verdicts and identity digests). */
describe('BoundedMemo', () => {
  it('computes a key once, and again only after it was let go', () => {
    const memo = new BoundedMemo<number>(2, 10);
    let computed = 0;
    const answer = (key: string) => memo.get(key, () => ++computed);
    expect([answer('a'), answer('a'), answer('b'), answer('a')]).toEqual([1, 1, 2, 1]);
    // Full: the next new key lets the least recently used go.
    expect(answer('c')).toBe(3);
    expect(memo.size).toBe(2);
    expect(answer('a')).toBe(1);
    expect(answer('b')).toBe(4);
  });

  it('keeps no key longer than its bound: a host cannot fill memory with long keys', () => {
    const memo = new BoundedMemo<string>(1_000, 4_096);
    const long = 'x'.repeat(4_097);
    let computed = 0;
    for (let i = 0; i < 3; i++) expect(memo.get(long + i, () => `answer ${++computed}`)).toBe(`answer ${computed}`);
    expect(memo.get(long + 0, () => `answer ${++computed}`)).toBe('answer 4');
    expect(memo.size).toBe(0);
    expect(memo.get('x'.repeat(4_096), () => 'kept')).toBe('kept');
    expect(memo.size).toBe(1);
  });
});
