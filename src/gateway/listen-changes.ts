import { createHash } from 'node:crypto';
import type { GatewayCaller } from './access.js';
import type { ServerFeatures } from '../core/servers/probe.js';
import type { Catalog, Route } from './catalog.js';
import { LIST_CHANGES, type ListKind } from './list-changes.js';
import { GatewayListenBus, type ListenStream } from './listen-bus.js';
import { followUpstreamLists, type UpstreamListsDeps } from './listen-upstreams.js';

const digest = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('base64url');

/**
 * What each of a caller's lists depends on in its gateway's configuration: the
 * naming mode, the usable routes (assignments, servers, identities), each
 * assignment's curation and the lists its server offered when last learned. Equal
 * digests mean the host would be shown the same list.
 */
export function listDigests(catalog: Catalog): Record<ListKind, string> {
  const each = (pick: (route: Route, features: ServerFeatures | null) => Record<string, unknown>) =>
    catalog.routes.map((r) => ({ slug: r.slug, assignment: r.assignmentGuid, server: r.serverGuid, ...pick(r, r.features) }));
  const offers = (features: ServerFeatures | null, capability: string) => (features ? features.capabilities[capability] !== undefined : null);
  return {
    tools: digest({
      naming: catalog.naming,
      routes: each((r, f) => ({ filter: r.toolFilter, overrides: r.toolOverrides, offers: offers(f, 'tools'), tools: f?.tools ?? null })),
    }),
    prompts: digest({ naming: catalog.naming, routes: each((_, f) => ({ offers: offers(f, 'prompts'), prompts: f?.prompts ?? null })) }),
    resources: digest({
      routes: each((_, f) => ({ offers: offers(f, 'resources'), resources: f?.resources ?? null, templates: f?.resourceTemplates ?? null })),
    }),
  };
}

/** The upstreams a caller's stream follows, and with which identity: when it changes, they are followed again. */
const followedKey = (catalog: Catalog): string =>
  JSON.stringify(catalog.routes.map((r) => [r.assignmentGuid, r.url, r.transport, r.features?.protocolVersion ?? null, r.identity?.guid ?? null]));

/** What a stream is compared with, and what it follows upstream. */
interface StreamState {
  digests: Record<ListKind, string>;
  followed: string;
  stopFollowing: () => void;
}

/**
 * `subscriptions/listen` at the gateways (contract 8.1): a 2026-07-28 host's listen
 * stream hears `notifications/{tools,prompts,resources}/list_changed` when its own
 * gateway's configuration changes in a way that changes what that host is shown,
 * in this replica or any other (configuration notices reach every replica: see
 * core/config-changes.ts), and never for another gateway or workspace. Each notice
 * of the stream's workspace re-reads the caller's routing table and compares it
 * with what the stream last saw, so a change elsewhere in the workspace says nothing.
 * The upstreams' own list_changed notifications are merged in (listen-upstreams.ts).
 */
export class ListenChanges {
  readonly bus: GatewayListenBus;
  private readonly states = new WeakMap<ListenStream, StreamState>();
  private readonly stopListening: () => void;
  private readonly checking = new Map<string, { again: boolean }>();

  constructor(private readonly deps: UpstreamListsDeps) {
    this.bus = new GatewayListenBus((stream) => {
      this.states.set(stream, {
        digests: listDigests(stream.catalog),
        followed: followedKey(stream.catalog),
        stopFollowing: followUpstreamLists(deps, stream.caller, stream.catalog, stream.deliver, stream.resources),
      });
      return () => {
        this.states.get(stream)?.stopFollowing();
        this.states.delete(stream);
      };
    });
    this.stopListening = deps.services.configChanges.subscribe((org) => this.recheck(org));
  }

  close(): void {
    this.stopListening();
  }

  /** A notice for a workspace: each of its connections with an open stream is checked, one check at a time per connection. */
  private recheck(organizationGuid: string): void {
    const callers = new Map<string, GatewayCaller>();
    for (const stream of this.bus.open(organizationGuid)) callers.set(stream.caller.connectionGuid, stream.caller);
    for (const caller of callers.values()) this.schedule(caller);
  }

  /**
   * Runs a check for one connection; a notice that arrives during it runs another
   * after it (the change may have landed after this check read the table). Checks of
   * one connection never overlap, so its streams hear of changes in order.
   */
  private schedule(caller: GatewayCaller): void {
    const running = this.checking.get(caller.connectionGuid);
    if (running) return void (running.again = true);
    const state = { again: false };
    this.checking.set(caller.connectionGuid, state);
    void (async () => {
      try {
        do {
          state.again = false;
          await this.check(caller);
        } while (state.again);
      } finally {
        this.checking.delete(caller.connectionGuid);
      }
    })();
  }

  private async check(caller: GatewayCaller): Promise<void> {
    let catalog: Catalog;
    try {
      catalog = await this.deps.catalogs.fresh(caller);
    } catch (err) {
      this.deps.services.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'listen: could not read a routing table again');
      return;
    }
    const digests = listDigests(catalog);
    const followed = followedKey(catalog);
    for (const stream of this.bus.open(caller.organizationGuid)) {
      if (stream.caller.connectionGuid !== caller.connectionGuid) continue;
      const state = this.states.get(stream);
      if (!state) continue;
      for (const { list, event } of LIST_CHANGES) if (state.digests[list] !== digests[list]) stream.deliver(event);
      state.digests = digests;
      if (state.followed !== followed) {
        state.stopFollowing();
        state.followed = followed;
        state.stopFollowing = followUpstreamLists(this.deps, stream.caller, catalog, stream.deliver, stream.resources);
      }
    }
  }
}
