import { z } from 'zod';
import { AppError, conflict, notFound } from '../errors.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { deleteIdentityRow, findVisibleIdentity, listVisibleIdentities, updateIdentity, type Identity } from '../repositories/identities.js';
import { findServer, scheduleValidation, updateServer, type InboundServer } from '../repositories/inbound-servers.js';
import {
  createCredentialIdentity,
  credentialFields,
  headersFrom,
  HeadersMap,
  headlessTokenSet,
  oauthFieldsGiven,
  oauthPathOf,
  type CredentialInput,
} from '../servers/credential-input.js';
import { beginAuthorization, discoverOAuthSettings, type OAuthServerSettings } from '../servers/oauth-authorize.js';
import type { Services } from '../services.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, READ_ONLY } from './common.js';
import { InboundServerWithAuthorization, toServerSummary } from './servers.js';

export const IdentitySummary = z.object({
  guid: z.string(),
  name: z.string(),
  enabled: z.boolean(),
  accessControl: z.enum(['private', 'global']),
  inboundServerGuid: z.string(),
});
/** Never a header name or value, token or client secret: those are write-only. */
export const toIdentitySummary = (i: Identity) => ({
  guid: i.guid,
  name: i.name,
  enabled: i.enabled,
  accessControl: i.access_control,
  inboundServerGuid: i.inbound_server_guid,
});

const IdentityGuid = Id('Identity guid');

/** An identity the caller may see; a private identity of someone else is a 404, as if it did not exist. */
async function loadIdentity({ services, principal }: OperationContext, guid: string): Promise<Identity> {
  const identity = await findVisibleIdentity(services.db, principal.organizationGuid, principal.userGuid, guid);
  if (!identity) throw notFound('Identity');
  return identity;
}

/** Creator-only operations (admin-api identities rule 3): holding accessAllIdentities does not help. */
async function loadOwnIdentity(ctx: OperationContext, guid: string): Promise<Identity> {
  const identity = await loadIdentity(ctx, guid);
  if (identity.creator_guid !== ctx.principal.userGuid)
    throw new AppError('not_creator', 'Only the creator of this identity may change its availability or headers.');
  return identity;
}

async function setIdentityEnabled(ctx: OperationContext, guid: string, enabled: boolean) {
  const identity = await loadIdentity(ctx, guid);
  if (identity.enabled === enabled) return toIdentitySummary(identity);
  return toIdentitySummary(await updateIdentity(ctx.services.db, identity.organization_guid, identity.guid, { enabled }));
}

/** The server's OAuth settings for a new authorization: stored ones, or discovered now (servers registered headless never were). */
async function oauthSettingsFor(
  services: Pick<Services, 'db' | 'egress' | 'secrets' | 'config'>,
  server: InboundServer,
  input: CredentialInput,
): Promise<OAuthServerSettings> {
  if (server.oauth_settings && !input.oauthClientId) return server.oauth_settings as unknown as OAuthServerSettings;
  const url = await services.egress.check('url', server.url);
  const { settings, clientSecret } = await discoverOAuthSettings(services, url, {
    clientId: input.oauthClientId,
    clientSecret: input.oauthClientSecret,
    scope: input.oauthScope,
  });
  const clientSecretGuid = clientSecret ? await services.secrets.put(services.db, server.organization_guid, { clientSecret }) : null;
  await updateServer(services.db, server.organization_guid, server.guid, {
    oauth_settings: JSON.stringify(settings),
    oauth_client_secret_guid: clientSecretGuid,
  });
  return settings;
}

export const identityOperations = [
  defineOperation({
    name: 'list_identities',
    title: 'List identities of a server',
    description:
      "Lists the identities (credentials) of an inbound server that the caller may see: global ones and the caller's own private ones. Never returns header values or tokens. " +
      'A deleted server keeps its identities until they are removed explicitly (delete_identity): they are listed here still.',
    method: 'GET',
    path: '/servers/:inboundServerGuid/identities',
    capability: 'accessAllIdentities',
    input: z.strictObject({ inboundServerGuid: Id('Inbound server guid') }),
    output: ItemsOf(IdentitySummary),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const server = await findServer(services.db, principal.organizationGuid, input.inboundServerGuid, { includeDeleted: true });
      if (!server) throw notFound('Inbound server');
      return { items: (await listVisibleIdentities(services.db, principal.organizationGuid, principal.userGuid, server.guid)).map(toIdentitySummary) };
    },
  }),
  defineOperation({
    name: 'add_identity',
    title: 'Add an identity to a server',
    description:
      "Adds a credential to an inbound server; the server's authenticationType selects the path. headers server: give headers; returns the identity. " +
      'OAuth server: give oauthAccessToken, oauthClientId and oauthTokenEndpoint (headless), or omit the token fields to get authorizationUrl for a human to approve (interactive; the identity exists only after approval); returns the server, which is validated again. ' +
      'Headers must not be passed to an OAuth server (409). accessControl: private (default) or global.',
    method: 'POST',
    path: '/servers/:inboundServerGuid/identities',
    capability: 'identityManagement',
    input: z.strictObject({ inboundServerGuid: Id('Inbound server guid'), ...credentialFields }),
    output: z.union([IdentitySummary, InboundServerWithAuthorization]),
    annotations: { ...CREATES, openWorldHint: true },
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      const server = await findServer(db, principal.organizationGuid, input.inboundServerGuid);
      if (!server) throw notFound('Inbound server');
      if (server.authentication_type === 'none') throw conflict('This server is open (authType none): it takes no identity.');
      if (server.authentication_type === 'headers') {
        const oauthFields = oauthFieldsGiven(input);
        if (oauthFields.length) throw conflict(`This server authenticates with headers: OAuth fields (${oauthFields.join(', ')}) do not apply to it.`);
        const headers = headersFrom(input);
        const identity = await db.transaction().execute(async (trx) => {
          const created = await createCredentialIdentity(services, trx, { server, creatorGuid: principal.userGuid, input, secret: headers });
          await scheduleValidation(trx, server, created.guid);
          return created;
        });
        services.serverValidation.kick(server.guid);
        return toIdentitySummary(identity);
      }
      if (input.headers !== undefined) throw conflict('This server authenticates with OAuth: headers must not be passed to it.');
      if ((await oauthPathOf(services, input)) === 'headless') {
        const updated = await db.transaction().execute(async (trx) => {
          const created = await createCredentialIdentity(services, trx, { server, creatorGuid: principal.userGuid, input, secret: headlessTokenSet(input) });
          return scheduleValidation(trx, server, created.guid);
        });
        services.serverValidation.kick(server.guid);
        return toServerSummary(updated);
      }
      const settings = await oauthSettingsFor(services, server, input);
      const authorizationUrl = await beginAuthorization(services, db, {
        server,
        settings,
        userGuid: principal.userGuid,
        identityLabel: input.identityLabel ?? null,
        accessControl: input.accessControl ?? 'private',
      });
      return { ...toServerSummary(server), authorizationUrl };
    },
  }),
  defineOperation({
    name: 'enable_identity',
    title: 'Enable an identity',
    description: 'Enables an identity so it can authenticate again. Saved only when it was disabled. A private identity of someone else is not found.',
    method: 'POST',
    path: '/identities/:identityGuid/enable',
    capability: 'identityManagement',
    input: z.strictObject({ identityGuid: IdentityGuid }),
    output: IdentitySummary,
    annotations: CHANGES,
    handler: async (ctx, input) => setIdentityEnabled(ctx, input.identityGuid, true),
  }),
  defineOperation({
    name: 'disable_identity',
    title: 'Disable an identity',
    description: 'Disables an identity: it can no longer authenticate. Saved only when it was enabled. A private identity of someone else is not found.',
    method: 'POST',
    path: '/identities/:identityGuid/disable',
    capability: 'identityManagement',
    input: z.strictObject({ identityGuid: IdentityGuid }),
    output: IdentitySummary,
    annotations: DESTROYS,
    handler: async (ctx, input) => setIdentityEnabled(ctx, input.identityGuid, false),
  }),
  defineOperation({
    name: 'delete_identity',
    title: 'Delete an identity',
    description: 'Deletes an identity. Its encrypted credential stays stored (organization-scoped, never exposed).',
    method: 'DELETE',
    path: '/identities/:identityGuid',
    capability: 'identityManagement',
    input: z.strictObject({ identityGuid: IdentityGuid }),
    output: z.object({ deleted: z.literal(true), identityGuid: z.string() }),
    annotations: DESTROYS,
    handler: async (ctx, input) => {
      const identity = await loadIdentity(ctx, input.identityGuid);
      await deleteIdentityRow(ctx.services.db, identity.organization_guid, identity.guid);
      return { deleted: true as const, identityGuid: identity.guid };
    },
  }),
  defineOperation({
    name: 'set_identity_availability',
    title: 'Set who may use an identity',
    description:
      'Makes an identity private (only its creator may use it) or global (anyone in the workspace). Only the creator may do this, whatever their capabilities.',
    method: 'PATCH',
    path: '/identities/:identityGuid/availability',
    capability: 'identityManagement',
    input: z.strictObject({ identityGuid: IdentityGuid, availability: z.enum(['private', 'global']).describe('private or global') }),
    output: IdentitySummary,
    annotations: CHANGES,
    handler: async (ctx, input) => {
      const identity = await loadOwnIdentity(ctx, input.identityGuid);
      if (identity.access_control === input.availability) return toIdentitySummary(identity);
      return toIdentitySummary(await updateIdentity(ctx.services.db, identity.organization_guid, identity.guid, { access_control: input.availability }));
    },
  }),
  defineOperation({
    name: 'set_identity_headers',
    title: "Replace an identity's headers",
    description:
      'Replaces the full header set of a headers identity (svc- prefixed and empty entries are dropped) and validates the server with it again. Only the creator may do this. Values are write-only; the answer names no header.',
    method: 'PUT',
    path: '/identities/:identityGuid/headers',
    capability: 'identityManagement',
    input: z.strictObject({ identityGuid: IdentityGuid, headers: HeadersMap }),
    output: IdentitySummary,
    annotations: CHANGES,
    handler: async (ctx, input) => {
      const { services } = ctx;
      const identity = await loadOwnIdentity(ctx, input.identityGuid);
      if (identity.kind !== 'headers') throw conflict('This identity holds OAuth tokens: headers must not be passed to an OAuth server.');
      const headers = headersFrom(input);
      // A disabled identity cannot authenticate, so there is nothing to validate it with.
      const server = identity.enabled ? await findServer(services.db, identity.organization_guid, identity.inbound_server_guid) : undefined;
      const updated = await services.db.transaction().execute(async (trx) => {
        let secretGuid = identity.secret_guid;
        if (secretGuid) await services.secrets.replace(trx, identity.organization_guid, secretGuid, headers);
        else secretGuid = await services.secrets.put(trx, identity.organization_guid, headers);
        const saved = await updateIdentity(trx, identity.organization_guid, identity.guid, { header_names: Object.keys(headers), secret_guid: secretGuid });
        if (server) await scheduleValidation(trx, server, identity.guid);
        return saved;
      });
      if (server) services.serverValidation.kick(server.guid);
      return toIdentitySummary(updated);
    },
  }),
];
