import { sql } from 'kysely';
import type { TokenQuery } from '../core/auth/token-resolver.js';
import { ADMIN_ENTITLEMENT } from '../core/executor.js';
import type { Services } from '../core/services.js';

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

/** The gateway's part of a token's row: gateway, connection, host and the team it is provisioned through. */
const gatewayColumns = (base: TokenQuery) =>
  base
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

/**
 * The gateway's access check. The token's row comes from the one token resolver,
 * which keeps it for the gateway cache TTL and drops it on a change notice (so a
 * fresh entry costs no database round trip); this adds only the gateway's own
 * checks: the token's gateway, the entitlement, and what is disabled.
 */
export class GatewayAccess {
  constructor(private readonly services: Pick<Services, 'tokens' | 'tokenUsage'>) {}

  /** Resolves the caller of `gatewayGuid` or throws GatewayAccessError. */
  async check(token: string | null, gatewayGuid: string): Promise<GatewayCaller> {
    const row = await this.services.tokens.resolve(token, 'gateway', gatewayColumns);
    if (!row) throw new GatewayAccessError(401, UNAUTHENTICATED);
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
}
