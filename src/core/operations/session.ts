import { z } from 'zod';
import { capabilityGroupsFor } from '../capabilities.js';
import { issueAccessToken } from '../auth/issue-access-token.js';
import { notFound } from '../errors.js';
import { defineOperation } from '../operation.js';
import { listLiveTokens, revokeToken } from '../repositories/access-tokens.js';
import { listTeams } from '../repositories/teams.js';
import { CHANGES, DESTROYS, Id, IsoTime, ItemsOf, READ_ONLY, iso, isoOrNull, isUniqueViolation } from './common.js';

const Whoami = z.object({
  user: z.object({ guid: z.string(), emailAddress: z.string(), displayName: z.string() }),
  organization: z.object({ guid: z.string(), name: z.string(), type: z.enum(['standard', 'partner']) }),
  teams: z.array(z.object({ guid: z.string(), name: z.string() })),
  role: z.object({ guid: z.string(), name: z.string() }),
  capabilities: z.array(z.string()),
});

const CreatedToken = z.object({
  id: z.string(),
  label: z.string(),
  prefix: z.string(),
  token: z.string().nullable().describe('The secret, returned only when minted now; null when alreadyExisted'),
  expiresAt: IsoTime.nullable(),
  createdAt: IsoTime,
  alreadyExisted: z.boolean(),
});

const TokenRow = z.object({
  id: z.string(),
  label: z.string(),
  kind: z.enum(['access', 'gateway']),
  prefix: z.string(),
  createdAt: IsoTime,
  expiresAt: IsoTime.nullable(),
  lastUsedAt: IsoTime.nullable(),
  gatewayGuid: z.string().nullable(),
});

const Capabilities = z.object({
  groups: z.array(z.object({ name: z.string(), capabilities: z.array(z.object({ key: z.string(), label: z.string(), description: z.string() })) })),
});

export const sessionOperations = [
  defineOperation({
    name: 'whoami',
    title: 'Who am I',
    description: 'Returns the calling user, their workspace, teams and role, and the capability keys the role grants.',
    method: 'GET',
    path: '/whoami',
    capability: null,
    input: z.strictObject({}),
    output: Whoami,
    annotations: READ_ONLY,
    // Authentication already resolved user, workspace and role: only the teams are read here.
    handler: async ({ services, principal }) => {
      const teams = await listTeams(services.db, principal.organizationGuid, principal.userGuid);
      return {
        user: { guid: principal.userGuid, emailAddress: principal.emailAddress, displayName: principal.displayName },
        organization: { guid: principal.organizationGuid, name: principal.organizationName, type: principal.organizationType },
        teams: teams.map((t) => ({ guid: t.guid, name: t.name })),
        role: { guid: principal.roleGuid, name: principal.roleName },
        capabilities: [...principal.capabilities].sort(),
      };
    },
  }),
  defineOperation({
    name: 'create_access_token',
    title: 'Create an access token',
    description:
      'Creates a personal access token for this interface and returns its secret once. Idempotent by label: when you already have a token with that label, it comes back with alreadyExisted true and token null. expiresInDays: 1 to 90 (default 90), 0 for never.',
    method: 'POST',
    path: '/tokens',
    capability: null,
    input: z.strictObject({
      label: z.string().trim().min(1, 'must not be empty').max(200).describe('A name for the token, unique among your tokens'),
      expiresInDays: z.number().int().min(0).max(90).optional().describe('Lifetime in days, 1 to 90 (default 90); 0 means it never expires'),
    }),
    output: CreatedToken,
    // Idempotent by label (admin-api, Session 1): the same call again mints nothing.
    annotations: CHANGES,
    successStatus: (out) => (out.alreadyExisted ? 200 : 201),
    handler: async ({ services, principal }, input) => {
      const opts = { organizationGuid: principal.organizationGuid, userGuid: principal.userGuid, label: input.label, expiresInDays: input.expiresInDays ?? 90 };
      const issued = await issueAccessToken(services.db, opts).catch((err: unknown) => {
        // A concurrent request with the same label won the race: answer as if it had come first.
        if (isUniqueViolation(err)) return issueAccessToken(services.db, opts);
        throw err;
      });
      const r = issued.record;
      return {
        id: r.id,
        label: r.label,
        prefix: r.prefix,
        token: issued.token,
        expiresAt: isoOrNull(r.expires_at),
        createdAt: iso(r.created_at),
        alreadyExisted: issued.alreadyExisted,
      };
    },
  }),
  defineOperation({
    name: 'list_access_tokens',
    title: 'List my tokens',
    description: 'Lists your live tokens (access tokens and gateway tokens) with label, prefix and times. Secrets are never returned.',
    method: 'GET',
    path: '/tokens',
    capability: null,
    input: z.strictObject({}),
    output: ItemsOf(TokenRow),
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => {
      const tokens = await listLiveTokens(services.db, principal.userGuid);
      return {
        items: tokens.map((t) => ({
          id: t.id,
          label: t.label,
          kind: t.kind,
          prefix: t.prefix,
          createdAt: iso(t.created_at),
          expiresAt: isoOrNull(t.expires_at),
          lastUsedAt: isoOrNull(services.tokenUsage.lastUsed(t.id, t.last_used_at)),
          gatewayGuid: t.gateway_guid,
        })),
      };
    },
  }),
  defineOperation({
    name: 'revoke_access_token',
    title: 'Revoke a token',
    description: 'Revokes one of your tokens (an access token, or a gateway token by its tokenId). It fails on its next use.',
    method: 'DELETE',
    path: '/tokens/:id',
    capability: null,
    input: z.strictObject({ id: Id('Token id, from list_access_tokens') }),
    output: z.object({ revoked: z.literal(true), id: z.string() }),
    annotations: DESTROYS,
    handler: async ({ services, principal }, input) => {
      if (!(await revokeToken(services.db, principal.userGuid, input.id))) throw notFound('Token');
      return { revoked: true as const, id: input.id };
    },
  }),
  defineOperation({
    name: 'list_capabilities',
    title: 'List capabilities',
    description: 'Lists every capability key, grouped, with a label and description: the keys to use in the grants of create_role and modify_role.',
    method: 'GET',
    path: '/capabilities',
    capability: null,
    input: z.strictObject({}),
    output: Capabilities,
    annotations: READ_ONLY,
    handler: async ({ principal }) => ({
      groups: capabilityGroupsFor(principal.organizationType).map((g) => ({ name: g.name, capabilities: g.capabilities.map((c) => ({ ...c })) })),
    }),
  }),
];
