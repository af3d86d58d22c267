/**
 * An in-process notice board for configuration changes. Every successful admin
 * operation that is not read-only posts the workspace it changed (the executor does
 * it, once for all operations), and so does feature-learning; caches on the hot
 * path (the gateway's token and routing caches) drop what they hold for that
 * workspace. Other processes are not told: their caches expire on their own
 * short TTL (docs/decisions.md, Gateway).
 */
export type ConfigChangeListener = (organizationGuid: string) => void;

export class ConfigChanges {
  private readonly listeners = new Set<ConfigChangeListener>();

  /** Registers a listener; returns the function that removes it. */
  subscribe(listener: ConfigChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every listener that `organizationGuid`'s configuration changed. A failing listener does not stop the others. */
  changed(organizationGuid: string): void {
    for (const listener of this.listeners) {
      try {
        listener(organizationGuid);
      } catch {
        /* a cache that cannot drop an entry still expires by TTL */
      }
    }
  }
}
