/**
 * The notice board for configuration changes. Every successful admin operation
 * that is not read-only posts the workspace it changed (the executor does it, once
 * for all operations), and so does feature-learning; caches on the hot path (the
 * gateway's token and routing caches) drop what they hold for that workspace and
 * open gateway event streams send list_changed. With a Postgres server, a relay
 * (LISTEN/NOTIFY) carries each notice to the other service processes, which
 * deliver it to their own listeners; a notice lost on the way is covered by the
 * caches' short TTLs (docs/decisions.md, Gateway).
 */
export type ConfigChangeListener = (organizationGuid: string) => void;

export class ConfigChanges {
  private readonly listeners = new Set<ConfigChangeListener>();

  /** Registers a listener; returns the function that removes it. */
  subscribe(listener: ConfigChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private readonly relays = new Set<ConfigChangeListener>();

  /** Registers where this process's own changes are also sent (other processes); returns the function that removes it. */
  relayTo(publish: ConfigChangeListener): () => void {
    this.relays.add(publish);
    return () => this.relays.delete(publish);
  }

  /** A change made in this process: tells every local listener, then the relays. */
  changed(organizationGuid: string): void {
    this.deliver(organizationGuid);
    for (const publish of this.relays) publish(organizationGuid);
  }

  /** Tells every local listener that `organizationGuid`'s configuration changed. A failing listener does not stop the others. */
  deliver(organizationGuid: string): void {
    for (const listener of this.listeners) {
      try {
        listener(organizationGuid);
      } catch {
        /* a cache that cannot drop an entry still expires by TTL */
      }
    }
  }
}
