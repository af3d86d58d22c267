import { z } from 'zod';
import { notFound, validationFailed } from '../errors.js';
import { newGuid } from '../ids.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { findServer, insertServer, listServers, updateServer, type InboundServer } from '../repositories/inbound-servers.js';
import {
  createCredentialIdentity,
  credentialFields,
  headersFrom,
  headlessTokenSet,
  oauthFieldsGiven,
  oauthPathOf,
  type CredentialInput,
} from '../servers/credential-input.js';
import type { HeadersSecret } from '../servers/credentials.js';
import { beginAuthorization, discoverOAuthSettings } from '../servers/oauth-authorize.js';
import { CHANGES, CREATES, DESTROYS, Id, ItemsOf, Name, READ_ONLY } from './common.js';

export const InboundServerSummary = z.object({
  guid: z.string(),
  name: z.string(),
  url: z.string(),
  enabled: z.boolean(),
  authenticationType: z.enum(['none', 'headers', 'oauth']),
  authenticationStatus: z.enum(['open', 'needs-authentication', 'authenticated', 'unsupported']),
});
/** The server summary on the interactive OAuth path: where a human approves access. */
export const InboundServerWithAuthorization = InboundServerSummary.extend({
  authorizationUrl: z.string().optional().describe('Open in a browser to approve access (interactive OAuth only)'),
});

export const toServerSummary = (s: InboundServer) => ({
  guid: s.guid,
  name: s.name,
  url: s.url,
  enabled: s.enabled,
  authenticationType: s.authentication_type,
  authenticationStatus: s.authentication_status,
});

const ServerGuid = Id('Inbound server guid');

async function loadServer({ services, principal }: OperationContext, guid: string): Promise<InboundServer> {
  const server = await findServer(services.db, principal.organizationGuid, guid);
  if (!server) throw notFound('Inbound server');
  return server;
}

/** Saves `enabled` only when it changes (admin-api state table). */
async function setServerEnabled(ctx: OperationContext, guid: string, enabled: boolean) {
  const server = await loadServer(ctx, guid);
  if (server.enabled === enabled) return toServerSummary(server);
  return toServerSummary(await updateServer(ctx.services.db, server.organization_guid, server.guid, { enabled }));
}

/** Fields an authType does not take, named in a 400 (create_inbound_server body rules). */
function refuseFields(input: CredentialInput, fields: string[], authType: string): void {
  const given = fields.filter((k) => input[k as keyof CredentialInput] !== undefined);
  if (given.length) throw validationFailed(given.map((k) => ({ path: k, message: `is not used with authType ${authType}` })));
}

const CreateInboundServerInput = z.strictObject({
  name: Name('Server display name'),
  url: z.string().min(1).max(2_048).describe('Remote MCP server URL (Streamable HTTP or SSE)'),
  authType: z.enum(['none', 'headers', 'oauth']).describe('none, headers (static headers) or oauth (OAuth 2.1: headless with tokens, or interactive)'),
  ...credentialFields,
});

export const serverOperations = [
  defineOperation({
    name: 'list_inbound_servers',
    title: 'List inbound servers',
    description: 'Lists the upstream MCP servers registered in the workspace, with their authentication type and status. Deleted servers are not listed.',
    method: 'GET',
    path: '/servers',
    capability: 'viewAllServers',
    input: z.strictObject({}),
    output: ItemsOf(InboundServerSummary),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => ({ items: (await listServers(services.db, principal.organizationGuid)).map(toServerSummary) }),
  }),
  defineOperation({
    name: 'get_inbound_server',
    title: 'Get an inbound server',
    description: 'Returns one inbound server. Poll it after create_inbound_server or add_identity until authenticationStatus is authenticated or unsupported.',
    method: 'GET',
    path: '/servers/:inboundServerGuid',
    capability: 'viewAllServers',
    input: z.strictObject({ inboundServerGuid: ServerGuid }),
    output: InboundServerSummary,
    annotations: READ_ONLY,
    handler: async (ctx, input) => toServerSummary(await loadServer(ctx, input.inboundServerGuid)),
  }),
  defineOperation({
    name: 'create_inbound_server',
    title: 'Register an inbound server',
    description:
      'Registers a remote MCP server, enabled and owned by the caller, then validates it and learns its tools asynchronously. authType none: status open, no identity. ' +
      'headers: give headers; an identity holds them encrypted; status needs-authentication, then authenticated or unsupported. ' +
      'oauth headless: give oauthAccessToken, oauthClientId and oauthTokenEndpoint (optionally oauthRefreshToken, oauthExpiresAt, oauthClientSecret, oauthScope). ' +
      'oauth interactive: omit the token fields; the answer carries authorizationUrl for a human to approve, and the identity is created after approval. ' +
      'URL and authentication are fixed at creation. Secrets are write-only.',
    method: 'POST',
    path: '/servers',
    capability: 'basicServerManagement',
    input: CreateInboundServerInput,
    output: InboundServerWithAuthorization,
    annotations: { ...CREATES, openWorldHint: true },
    successStatus: 201,
    handler: async ({ services, principal }, input) => {
      const { db } = services;
      let headers: HeadersSecret | undefined;
      let oauthPath: 'headless' | 'interactive' | undefined;
      if (input.authType === 'none') refuseFields(input, ['headers', ...oauthFieldsGiven(input)], 'none');
      if (input.authType === 'headers') {
        refuseFields(input, oauthFieldsGiven(input), 'headers');
        headers = headersFrom(input);
      }
      if (input.authType === 'oauth') {
        refuseFields(input, ['headers'], 'oauth');
        oauthPath = await oauthPathOf(services, input);
      }
      const url = await services.egress.check('url', input.url);
      // Discovery happens before anything is stored, so a server that cannot be authorized is never half-created.
      const discovered =
        oauthPath === 'interactive'
          ? await discoverOAuthSettings(services, url, { clientId: input.oauthClientId, clientSecret: input.oauthClientSecret, scope: input.oauthScope })
          : undefined;

      const { server, authorizationUrl } = await db.transaction().execute(async (trx) => {
        const clientSecretGuid = discovered?.clientSecret
          ? await services.secrets.put(trx, principal.organizationGuid, { clientSecret: discovered.clientSecret })
          : null;
        const interactive = oauthPath === 'interactive';
        const created = await insertServer(trx, {
          guid: newGuid(),
          organization_guid: principal.organizationGuid,
          name: input.name,
          url: input.url,
          authentication_type: input.authType,
          authentication_status: input.authType === 'none' ? 'open' : 'needs-authentication',
          owner_guid: principal.userGuid,
          oauth_settings: discovered ? JSON.stringify(discovered.settings) : null,
          oauth_client_secret_guid: clientSecretGuid,
          // Interactive servers have nothing to validate with until the human approves.
          validation_due_at: interactive ? null : new Date(),
        });
        if (headers) await createCredentialIdentity(services, trx, { server: created, creatorGuid: principal.userGuid, input, secret: headers });
        if (oauthPath === 'headless')
          await createCredentialIdentity(services, trx, { server: created, creatorGuid: principal.userGuid, input, secret: headlessTokenSet(input) });
        const authorizationUrl = interactive
          ? await beginAuthorization(services, trx, {
              server: created,
              settings: discovered!.settings,
              userGuid: principal.userGuid,
              identityLabel: input.identityLabel ?? null,
              accessControl: input.accessControl ?? 'private',
            })
          : undefined;
        return { server: created, authorizationUrl };
      });
      services.serverValidation.kick(server.guid);
      return { ...toServerSummary(server), ...(authorizationUrl ? { authorizationUrl } : {}) };
    },
  }),
  defineOperation({
    name: 'rename_inbound_server',
    title: 'Rename an inbound server',
    description: 'Renames an inbound server; the name is its only editable field. Nothing is saved when the name is already the requested one.',
    method: 'PATCH',
    path: '/servers/:inboundServerGuid/name',
    capability: 'basicServerManagement',
    input: z.strictObject({ inboundServerGuid: ServerGuid, newName: Name('New server name') }),
    output: InboundServerSummary,
    annotations: CHANGES,
    handler: async (ctx, input) => {
      const server = await loadServer(ctx, input.inboundServerGuid);
      if (server.name === input.newName) return toServerSummary(server);
      return toServerSummary(await updateServer(ctx.services.db, server.organization_guid, server.guid, { name: input.newName }));
    },
  }),
  defineOperation({
    name: 'enable_inbound_server',
    title: 'Enable an inbound server',
    description: 'Enables an inbound server, making its gateway assignments usable again. Saved only when it was disabled.',
    method: 'POST',
    path: '/servers/:inboundServerGuid/enable',
    capability: 'enableDisableServers',
    input: z.strictObject({ inboundServerGuid: ServerGuid }),
    output: InboundServerSummary,
    annotations: CHANGES,
    handler: async (ctx, input) => setServerEnabled(ctx, input.inboundServerGuid, true),
  }),
  defineOperation({
    name: 'disable_inbound_server',
    title: 'Disable an inbound server',
    description: 'Disables an inbound server. Its gateway assignments stay but go inert until it is enabled again. Saved only when it was enabled.',
    method: 'POST',
    path: '/servers/:inboundServerGuid/disable',
    capability: 'enableDisableServers',
    input: z.strictObject({ inboundServerGuid: ServerGuid }),
    output: InboundServerSummary,
    annotations: DESTROYS,
    handler: async (ctx, input) => setServerEnabled(ctx, input.inboundServerGuid, false),
  }),
  defineOperation({
    name: 'delete_inbound_server',
    title: 'Delete an inbound server',
    description: 'Deletes an inbound server. Its gateway assignments are not deleted (they go inert) and its identities remain until removed explicitly.',
    method: 'DELETE',
    path: '/servers/:inboundServerGuid',
    capability: 'deleteServers',
    input: z.strictObject({ inboundServerGuid: ServerGuid }),
    output: z.object({ deleted: z.literal(true), inboundServerGuid: z.string() }),
    annotations: DESTROYS,
    handler: async (ctx, input) => {
      const server = await loadServer(ctx, input.inboundServerGuid);
      const { db } = ctx.services;
      await db.transaction().execute(async (trx) => {
        await updateServer(trx, server.organization_guid, server.guid, { deleted_at: new Date(), validation_due_at: null, validation_identity_guid: null });
        // Pending approvals die with the server: the callback would find nothing to attach to.
        await trx.deleteFrom('oauth_states').where('organization_guid', '=', server.organization_guid).where('inbound_server_guid', '=', server.guid).execute();
      });
      return { deleted: true as const, inboundServerGuid: server.guid };
    },
  }),
];
