import { z } from 'zod';
import type { ConfigDb } from '../../stores/postgres.js';
import { mintToken } from '../auth/tokens.js';
import { AppError, conflict, notFound, validationFailed, type FieldError } from '../errors.js';
import { isGuid, newGuid } from '../ids.js';
import { defineOperation, type Principal } from '../operation.js';
import { insertAccessToken } from '../repositories/access-tokens.js';
import { userIdentityServers } from '../repositories/assignments.js';
import { insertConnection } from '../repositories/connections.js';
import { findHost } from '../repositories/hosts.js';
import { findVisibleIdentity } from '../repositories/identities.js';
import { CREATES, Id } from './common.js';
import { GatewayGuid, gatewayUrl, loadGateway, refuseIfArchived } from './gateways.js';

/** Gateway tokens live as long as the default access token; revoke_access_token ends them earlier. */
export const GATEWAY_TOKEN_LIFETIME_DAYS = 90;
const DAY_MS = 86_400_000;

const IssuedGatewayToken = z.object({
  token: z.string().describe('The gateway token, returned only now: send it to url as `Authorization: Bearer <token>`'),
  tokenId: z.string().describe('Revoke it with revoke_access_token'),
  gatewayGuid: z.string(),
  connectionGuid: z.string(),
  url: z.string(),
});

/**
 * Checks the caller's identity selections against what the gateway needs. Every
 * userIdentity server must have a selection (else 422 naming all of them at once);
 * each selection must name a server that needs one and an enabled identity of that
 * server that the caller may see.
 */
async function checkSelections(db: ConfigDb, principal: Principal, gatewayGuid: string, selections: Record<string, string>): Promise<void> {
  const required = await userIdentityServers(db, principal.organizationGuid, gatewayGuid);
  const missing = required.filter((server) => !Object.hasOwn(selections, server.guid));
  if (missing.length > 0) {
    // Named for a person too (the console shows the detail), by guid for a program (`servers`).
    throw new AppError(
      'identity_selection_required',
      `These servers of the gateway use identityScheme userIdentity and need an identity in serverIdentities: ${missing.map((s) => `${s.name} (${s.guid})`).join(', ')}.`,
      { servers: missing.map((s) => s.guid) },
    );
  }
  const needed = new Set(required.map((s) => s.guid));
  const unexpected: FieldError[] = Object.keys(selections)
    .filter((server) => !needed.has(server))
    .map((server) => ({ path: `serverIdentities.${server}`, message: 'not a server of this gateway with identityScheme userIdentity' }));
  if (unexpected.length > 0) throw validationFailed(unexpected);
  for (const [server, identityGuid] of Object.entries(selections)) {
    const identity = isGuid(identityGuid) ? await findVisibleIdentity(db, principal.organizationGuid, principal.userGuid, identityGuid) : undefined;
    if (!identity) throw new AppError('not_found', `Identity not found: ${identityGuid.slice(0, 64)} (serverIdentities.${server}).`);
    if (identity.inbound_server_guid !== server) {
      throw validationFailed([{ path: `serverIdentities.${server}`, message: `identity ${identityGuid} is not an identity of this server` }]);
    }
    if (!identity.enabled) throw conflict(`The identity ${identityGuid} selected for server ${server} is disabled: enable it or select another.`);
  }
}

export const gatewayTokenOperations = [
  defineOperation({
    name: 'issue_gateway_token',
    title: 'Issue a gateway token',
    description:
      'Issues a gateway token for the caller and provisions a connection named "<your email> via <gateway name>" (bound to hostGuid when given). The token is returned once; send it to url as a bearer token. Every server of the gateway with identityScheme userIdentity needs an identity in serverIdentities (server guid to identity guid), otherwise nothing is issued and the error (identity_selection_required) lists those servers. Revoke with revoke_access_token(tokenId).',
    method: 'POST',
    path: '/gateways/:gatewayGuid/tokens',
    capability: 'createAndManageApiTokens',
    input: z.strictObject({
      gatewayGuid: GatewayGuid,
      serverIdentities: z.record(z.string(), z.string()).optional().describe('Inbound server guid to the identity guid you use for it (userIdentity servers)'),
      hostGuid: Id('Host the connection belongs to (optional)').optional(),
    }),
    output: IssuedGatewayToken,
    annotations: CREATES,
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      const gateway = await loadGateway(db, principal, input.gatewayGuid);
      const host = input.hostGuid === undefined ? null : isGuid(input.hostGuid) ? await findHost(db, principal.organizationGuid, input.hostGuid) : undefined;
      if (host === undefined) throw notFound('Host');
      refuseIfArchived(gateway, 'issue tokens for it');
      // Ids compare as the store writes them (lower case), whatever case the caller used.
      const selections = Object.fromEntries(
        Object.entries(input.serverIdentities ?? {}).map(([server, identity]) => [server.toLowerCase(), identity.toLowerCase()]),
      );
      await checkSelections(db, principal, gateway.guid, selections);

      const minted = mintToken('gateway');
      const now = new Date();
      const name = `${principal.emailAddress} via ${gateway.name}`;
      const issued = await db.transaction().execute(async (trx) => {
        const connection = await insertConnection(trx, {
          guid: newGuid(),
          organization_guid: principal.organizationGuid,
          name,
          gateway_guid: gateway.guid,
          host_guid: host?.guid ?? null,
          creator_guid: principal.userGuid,
          server_identities: selections,
        });
        const token = await insertAccessToken(trx, {
          id: newGuid(),
          organization_guid: principal.organizationGuid,
          user_guid: principal.userGuid,
          kind: 'gateway',
          label: name,
          prefix: minted.prefix,
          token_hash: minted.hash,
          gateway_guid: gateway.guid,
          connection_guid: connection.guid,
          expires_at: new Date(now.getTime() + GATEWAY_TOKEN_LIFETIME_DAYS * DAY_MS),
          created_at: now,
        });
        return { tokenId: token.id, connectionGuid: connection.guid };
      });
      return {
        token: minted.token,
        tokenId: issued.tokenId,
        gatewayGuid: gateway.guid,
        connectionGuid: issued.connectionGuid,
        url: gatewayUrl(services.config, gateway.guid),
      };
    },
  }),
];
