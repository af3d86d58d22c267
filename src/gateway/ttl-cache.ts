import { isStoreUnreachable, STALE_WHILE_STORE_AWAY_MS } from '../stores/store-errors.js';

/**
 * A small map whose entries expire after `ttlMs` and can be dropped per workspace
 * (on a configuration change in this process). The gateway keeps its hot-path
 * lookups here, so a request needs no database round trip while an entry is fresh.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; organizationGuid: string; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
  ) {}

  /** The value of `key` while it is fresh. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = Date.now();
    if (entry.expiresAt > now) return entry.value;
    if (entry.expiresAt + STALE_WHILE_STORE_AWAY_MS <= now) this.entries.delete(key);
    return undefined;
  }

  /** The value of `key`, fresh or at most STALE_WHILE_STORE_AWAY_MS past its TTL. */
  stale(key: string): V | undefined {
    const entry = this.entries.get(key);
    return entry && entry.expiresAt + STALE_WHILE_STORE_AWAY_MS > Date.now() ? entry.value : undefined;
  }

  set(key: string, organizationGuid: string, value: V): void {
    if (this.ttlMs <= 0) return;
    // Bounded: past the limit the oldest entry goes (Map keeps insertion order).
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.delete(key);
    this.entries.set(key, { value, organizationGuid, expiresAt: Date.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Drops every entry of a workspace. */
  dropWorkspace(organizationGuid: string): void {
    for (const [key, entry] of this.entries) if (entry.organizationGuid === organizationGuid) this.entries.delete(key);
  }

  /**
   * The fresh value of `key`, else `load` (once for concurrent callers) kept for the
   * TTL; when the load fails because a store cannot be reached, the stale value if
   * there is one.
   */
  async getOrLoad(key: string, organizationGuid: string, flights: SingleFlight<V>, load: () => Promise<V>): Promise<V> {
    const fresh = this.get(key);
    if (fresh !== undefined) return fresh;
    try {
      const value = await flights.run(key, load);
      this.set(key, organizationGuid, value);
      return value;
    } catch (err) {
      return this.staleOr(key, err);
    }
  }

  /** After a failed load: the stale value of `key` when a store could not be reached, else `err` thrown again. */
  staleOr(key: string, err: unknown): V {
    const stale = isStoreUnreachable(err) ? this.stale(key) : undefined;
    if (stale === undefined) throw err;
    return stale;
  }
}

/** Runs `load` once for concurrent callers of the same key. */
export class SingleFlight<V> {
  private readonly running = new Map<string, Promise<V>>();

  run(key: string, load: () => Promise<V>): Promise<V> {
    const existing = this.running.get(key);
    if (existing) return existing;
    const p = load().finally(() => this.running.delete(key));
    this.running.set(key, p);
    return p;
  }
}
