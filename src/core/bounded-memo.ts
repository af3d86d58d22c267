import { LRUCache } from 'lru-cache';

/**
 * Answers remembered by a key a host makes (the JSON of what it sent), bounded in
 * count and in the length of the keys kept: a host may make its key as long as a
 * request allows, and a thousand such keys kept would be a gigabyte. A key longer
 * than the bound is answered afresh each time; past the count, the least recently
 * used answer goes.
 */
export class BoundedMemo<T extends NonNullable<unknown>> {
  private readonly kept: LRUCache<string, T>;

  constructor(maxEntries = 1_000, maxKeyChars = 4_096) {
    this.kept = new LRUCache({ max: maxEntries, maxEntrySize: maxKeyChars, sizeCalculation: (_answer, key) => Math.max(1, key.length) });
  }

  /** The answer for `key`: the one kept, or `compute`'s, kept when the key is short enough. */
  get(key: string, compute: () => T): T {
    const known = this.kept.get(key);
    if (known !== undefined) return known;
    const answer = compute();
    this.kept.set(key, answer);
    return answer;
  }

  get size(): number {
    return this.kept.size;
  }
}
