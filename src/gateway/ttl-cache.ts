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

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, organizationGuid: string, value: V): void {
    if (this.ttlMs <= 0) return;
    // Bounded: past the limit the oldest entry goes (Map keeps insertion order).
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, organizationGuid, expiresAt: Date.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Drops every entry of a workspace. */
  dropWorkspace(organizationGuid: string): void {
    for (const [key, entry] of this.entries) if (entry.organizationGuid === organizationGuid) this.entries.delete(key);
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
