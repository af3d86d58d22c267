import type { Identity } from '../core/repositories/identities.js';
import type { OAuthTokenSet, HeadersSecret } from '../core/servers/credentials.js';
import { freshTokenSet, needsRefresh } from '../core/servers/oauth-refresh.js';
import type { ServerFeatures } from '../core/servers/probe.js';
import type { Services } from '../core/services.js';
import type { AuthenticationType, IdentityScheme, ToolFilter, ToolNamingMode, ToolOverrides } from '../stores/schema.js';
import type { GatewayCaller } from './access.js';
import { uniqueSlugs } from './namespacing.js';
import { SingleFlight, TtlCache } from './ttl-cache.js';

/** One upstream a connection can reach: an enabled assignment of an enabled server with a usable identity. */
export interface Route {
  slug: string;
  assignmentGuid: string;
  serverGuid: string;
  serverName: string;
  url: string;
  /** How the upstream was reached when it was validated. */
  transport: 'streamable-http' | 'sse';
  authenticationType: AuthenticationType;
  identityScheme: IdentityScheme | null;
  identity: Pick<Identity, 'guid' | 'organization_guid' | 'inbound_server_guid' | 'secret_guid' | 'kind' | 'header_names'> | null;
  features: ServerFeatures | null;
  /** The assignment's tool curation (contract 8.2), by the upstream's own names. */
  toolFilter: ToolFilter | null;
  toolOverrides: ToolOverrides | null;
}

/** A connection's view of its gateway: the usable routes, by slug. */
export interface Catalog {
  /** How the gateway names tools and prompts for hosts. */
  naming: ToolNamingMode;
  routes: Route[];
  bySlug: Map<string, Route>;
  byAssignment: Map<string, Route>;
  /** Slugs of assignments that exist but cannot be used now (disabled, or without a usable identity), with why. */
  unavailable: Map<string, string>;
}

/** What a route authenticates with: headers to send, and the secret strings to keep out of anything stored. */
export interface RouteCredential {
  headers: Record<string, string>;
  secrets: string[];
  /** Header names that carry the credential (redacted from call-log headers). */
  headerNames: string[];
}

/** An OAuth identity's token is refreshed because an upstream refused it at most this often. */
const FORCED_REFRESH_INTERVAL_MS = 60_000;

/**
 * The routing table of each connection, read once per cache TTL (two queries) and
 * dropped at once by a configuration change in this process. Slugs come from
 * every non-deleted assignment of the gateway, so disabling one server does not
 * rename the others.
 */
export class Catalogs {
  private readonly cache: TtlCache<Catalog>;
  private readonly loads = new SingleFlight<Catalog>();
  private readonly credentials: TtlCache<RouteCredential>;
  /** OAuth identities whose next credential is a refreshed token (the upstream refused the last), and when each was last so marked. */
  private readonly refreshNext = new Set<string>();
  private readonly lastForcedRefresh = new Map<string, number>();

  /** Stops listening for configuration changes. */
  readonly close: () => void;

  constructor(private readonly services: Pick<Services, 'config' | 'configChanges' | 'db' | 'secrets' | 'egress' | 'alerts' | 'logger'>) {
    this.cache = new TtlCache(services.config.gateway.cacheTtlMs);
    this.credentials = new TtlCache(services.config.gateway.cacheTtlMs);
    this.close = services.configChanges.subscribe((org) => {
      this.cache.dropWorkspace(org);
      this.credentials.dropWorkspace(org);
    });
  }

  forCaller(caller: GatewayCaller): Promise<Catalog> {
    return this.cache.getOrLoad(caller.connectionGuid, caller.organizationGuid, this.loads, () => this.load(caller));
  }

  /** The routing table as it is now, past the cache and any load in flight (which may have begun before a change). */
  fresh(caller: GatewayCaller): Promise<Catalog> {
    return this.load(caller);
  }

  /** The headers a call through `route` carries; OAuth tokens are refreshed before they expire. */
  async credential(route: Route): Promise<RouteCredential> {
    if (!route.identity || route.authenticationType === 'none') return { headers: {}, secrets: [], headerNames: [] };
    const identity = route.identity;
    const cached = this.credentials.get(identity.guid);
    if (cached) return cached;
    try {
      return await this.loadCredential(identity);
    } catch (err) {
      // While the store is away the credential last used still serves (as the routes do).
      return this.credentials.staleOr(identity.guid, err);
    }
  }

  private async loadCredential(identity: NonNullable<Route['identity']>): Promise<RouteCredential> {
    let credential: RouteCredential;
    if (identity.kind === 'oauth') {
      const set: OAuthTokenSet = await freshTokenSet(this.services, identity, { force: this.refreshNext.delete(identity.guid) });
      credential = {
        headers: { authorization: `Bearer ${set.accessToken}` },
        secrets: [set.accessToken, set.refreshToken ?? '', set.clientSecret ?? ''].filter(Boolean),
        headerNames: ['authorization'],
      };
      // A token about to expire is not cached: the next call refreshes it.
      if (needsRefresh(set)) return credential;
    } else {
      const map = (await this.services.secrets.get<HeadersSecret>(this.services.db, identity.organization_guid, identity.secret_guid ?? '')) ?? {};
      credential = { headers: { ...map }, secrets: Object.values(map), headerNames: Object.keys(map) };
    }
    this.credentials.set(identity.guid, identity.organization_guid, credential);
    return credential;
  }

  /**
   * Forgets a route's cached credential after the upstream refused it. An OAuth token is
   * refreshed for the next call (its expiry may not be known, or the upstream may have
   * revoked it early), at most once a minute per identity: an upstream that refuses
   * every token does not make each call a refresh.
   */
  forgetCredential(route: Route): void {
    const identity = route.identity;
    if (!identity) return;
    this.credentials.delete(identity.guid);
    if (identity.kind !== 'oauth') return;
    const now = Date.now();
    if (now - (this.lastForcedRefresh.get(identity.guid) ?? 0) < FORCED_REFRESH_INTERVAL_MS) return;
    this.lastForcedRefresh.set(identity.guid, now);
    this.refreshNext.add(identity.guid);
  }

  private async load(caller: GatewayCaller): Promise<Catalog> {
    const { db } = this.services;
    const rows = await db
      .selectFrom('gateway_assignments as a')
      .innerJoin('inbound_servers as s', 's.guid', 'a.inbound_server_guid')
      .innerJoin('gateways as g', 'g.guid', 'a.gateway_guid')
      .select([
        'g.tool_naming',
        'a.tool_filter',
        'a.tool_overrides',
        'a.guid as assignment_guid',
        'a.enabled as assignment_enabled',
        'a.identity_scheme',
        'a.shared_identity_guid',
        's.guid as server_guid',
        's.name as server_name',
        's.url',
        's.enabled as server_enabled',
        's.authentication_type',
        's.features',
      ])
      .where('a.organization_guid', '=', caller.organizationGuid)
      .where('a.gateway_guid', '=', caller.gatewayGuid)
      .where('s.deleted_at', 'is', null)
      .orderBy('a.created_at')
      .orderBy('a.guid')
      .execute();
    const identityGuids = new Set<string>();
    for (const row of rows) {
      if (row.identity_scheme === 'sharedIdentity' && row.shared_identity_guid) identityGuids.add(row.shared_identity_guid);
      const chosen = caller.serverIdentities[row.server_guid];
      if (row.identity_scheme === 'userIdentity' && chosen) identityGuids.add(chosen);
    }
    const identities = identityGuids.size
      ? await db
          .selectFrom('identities')
          .select(['guid', 'organization_guid', 'inbound_server_guid', 'secret_guid', 'kind', 'header_names', 'enabled', 'access_control', 'creator_guid'])
          .where('organization_guid', '=', caller.organizationGuid)
          .where('guid', 'in', [...identityGuids])
          .execute()
      : [];
    const identityByGuid = new Map(identities.map((i) => [i.guid, i]));
    const slugs = uniqueSlugs(rows.map((r) => ({ serverName: r.server_name, guid: r.assignment_guid })));
    const routes: Route[] = [];
    const unavailable = new Map<string, string>();
    rows.forEach((row, i) => {
      const slug = slugs[i]!;
      if (!row.assignment_enabled) return void unavailable.set(slug, 'its assignment to this gateway is disabled');
      if (!row.server_enabled) return void unavailable.set(slug, `the server ${row.server_name} is disabled`);
      let identity: Route['identity'] = null;
      if (row.authentication_type !== 'none') {
        const identityGuid =
          row.identity_scheme === 'sharedIdentity'
            ? row.shared_identity_guid
            : row.identity_scheme === 'userIdentity'
              ? caller.serverIdentities[row.server_guid]
              : undefined;
        const found = identityGuid ? identityByGuid.get(identityGuid) : undefined;
        if (!row.identity_scheme) return void unavailable.set(slug, `the assignment of ${row.server_name} is not configured with an identity`);
        if (!found || found.inbound_server_guid !== row.server_guid)
          return void unavailable.set(slug, `no identity of ${row.server_name} is chosen for this connection`);
        if (!found.enabled) return void unavailable.set(slug, `the identity used for ${row.server_name} is disabled`);
        // A private identity is its creator's alone (admin-api, Identities 2): made private after another user chose it, it stops serving them.
        if (row.identity_scheme === 'userIdentity' && found.access_control === 'private' && found.creator_guid !== caller.userGuid)
          return void unavailable.set(slug, `the identity chosen for ${row.server_name} is private to its creator`);
        identity = found;
      }
      const features = (row.features ?? null) as ServerFeatures | null;
      routes.push({
        slug,
        assignmentGuid: row.assignment_guid,
        serverGuid: row.server_guid,
        serverName: row.server_name,
        url: row.url,
        transport: features?.transport ?? 'streamable-http',
        authenticationType: row.authentication_type,
        identityScheme: row.identity_scheme,
        identity,
        features,
        toolFilter: row.tool_filter ?? null,
        toolOverrides: row.tool_overrides ?? null,
      });
    });
    return {
      naming: rows[0]?.tool_naming ?? 'prefixed',
      routes,
      bySlug: new Map(routes.map((r) => [r.slug, r])),
      byAssignment: new Map(routes.map((r) => [r.assignmentGuid, r])),
      unavailable,
    };
  }
}
