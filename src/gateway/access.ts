import { sql } from 'kysely';
import { expiryOf, tokenHashOf, tokenQuery, tokenUsable, type ResolvedTokenColumns } from '../core/auth/token-resolver.js';
import { ADMIN_ENTITLEMENT } from '../core/executor.js';
import type { Services } from '../core/services.js';
import { SingleFlight, TtlCache } from './ttl-cache.js';

/** Who is calling a gateway: resolved from a gateway token, with everything a call log row needs. */
export interface GatewayCaller {
  tokenId: string;
  organizationGuid: string;
  userGuid: string;
  gatewayGuid: string;
  gatewayName: string;
  connectionGuid: string;
  hostGuid: string | null;
  /** A team of the user that the gateway is provisioned to, when there is one. */
  teamGuid: string | null;
  /** inbound server guid -> identity guid, chosen when the token was issued (userIdentity servers). */
  serverIdentities: Record<string, string>;
}

/** Why a request is refused: 401 for anything about the token itself (one answer for every reason), 403 for a disabled resource. */
export class GatewayAccessError extends Error {
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
  }
}

const UNAUTHENTICATED = 'A valid gateway token is required: send the token from issue_gateway_token as `Authorization: Bearer <token>`.';

interface TokenRow extends ResolvedTokenColumns {
  expires_at: Date | null;
  gateway_guid: string;
  gateway_name: string;
  gateway_enabled: boolean;
  gateway_archived: boolean;
  connection_guid: string;
  connection_enabled: boolean;
  server_identities: Record<string, string>;
  host_guid: string | null;
  host_enabled: boolean | null;
  team_guid: string | null;
}

/**
 * The gateway's access check. A token's row (token, user, workspace entitlement,
 * gateway, connection, host) is read once and kept for the cache TTL; every request
 * re-applies the rules to it (expiry is a clock comparison), so a fresh entry costs
 * no database round trip. A change made through the admin interface in this
 * process drops the workspace's entries at once; other processes notice within
 * the TTL.
 */
export class GatewayAccess {
  private readonly cache: TtlCache<TokenRow | null>;
  private readonly loads = new SingleFlight<TokenRow | null>();

  /** Stops listening for configuration changes. */
  readonly close: () => void;

  constructor(private readonly services: Services) {
    this.cache = new TtlCache(services.config.gateway.cacheTtlMs);
    this.close = services.configChanges.subscribe((org) => this.cache.dropWorkspace(org));
  }

  /** Resolves the caller of `gatewayGuid` or throws GatewayAccessError. */
  async check(token: string | null, gatewayGuid: string): Promise<GatewayCaller> {
    const hash = tokenHashOf(token, 'gateway');
    if (!hash) throw new GatewayAccessError(401, UNAUTHENTICATED);
    let row = this.cache.get(hash);
    if (row === undefined) {
      row = await this.loads.run(hash, () => this.load(hash));
      // Unknown tokens are cached too (under no workspace), so guessing costs no query per try.
      this.cache.set(hash, row?.organization_guid ?? '', row);
    }
    if (!row || !tokenUsable(row)) throw new GatewayAccessError(401, UNAUTHENTICATED);
    if (row.gateway_guid !== gatewayGuid.toLowerCase()) throw new GatewayAccessError(401, UNAUTHENTICATED);
    if (!row.entitled) throw new GatewayAccessError(403, `This workspace does not hold the entitlement ${ADMIN_ENTITLEMENT}.`);
    if (!row.gateway_enabled || row.gateway_archived)
      throw new GatewayAccessError(403, `The gateway ${row.gateway_name} is ${row.gateway_archived ? 'archived' : 'disabled'}.`);
    if (!row.connection_enabled) throw new GatewayAccessError(403, 'This connection is disabled.');
    if (row.host_guid && !row.host_enabled) throw new GatewayAccessError(403, "This connection's host is disabled.");
    this.services.tokenUsage.note(row.token_id);
    return {
      tokenId: row.token_id,
      organizationGuid: row.organization_guid,
      userGuid: row.user_guid,
      gatewayGuid: row.gateway_guid,
      gatewayName: row.gateway_name,
      connectionGuid: row.connection_guid,
      hostGuid: row.host_guid,
      teamGuid: row.team_guid,
      serverIdentities: row.server_identities ?? {},
    };
  }

  private async load(hash: string): Promise<TokenRow | null> {
    const row = await tokenQuery(this.services.db, hash, 'gateway')
      .innerJoin('gateways as g', 'g.guid', 't.gateway_guid')
      .innerJoin('connections as c', 'c.guid', 't.connection_guid')
      .leftJoin('hosts as h', 'h.guid', 'c.host_guid')
      .select([
        'g.guid as gateway_guid',
        'g.name as gateway_name',
        'g.enabled as gateway_enabled',
        'g.archived as gateway_archived',
        'c.guid as connection_guid',
        'c.enabled as connection_enabled',
        'c.server_identities',
        'c.host_guid',
        'h.enabled as host_enabled',
        sql<
          string | null
        >`(select tm.team_guid from team_members tm join gateway_teams gt on gt.team_guid = tm.team_guid where tm.user_guid = u.guid and gt.gateway_guid = g.guid order by tm.team_guid limit 1)`.as(
          'team_guid',
        ),
      ])
      .executeTakeFirst();
    if (!row) return null;
    return { ...row, revoked: Boolean(row.revoked), entitled: Boolean(row.entitled), expires_at: expiryOf(row) } as TokenRow;
  }
}
