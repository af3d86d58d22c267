import type { z } from 'zod';
import { AppError, notFound, toAppError } from './errors.js';
import { parseAdminCommand, type AdminCommandName, type commandSchemas } from './admin-command-input.js';
import { targetGuidsOf } from './audit/audit-record.js';
import { isGuid } from './ids.js';
import { issueAccessToken } from './auth/issue-access-token.js';
import { findOrganization, grantEntitlement, revokeEntitlement } from './repositories/organizations.js';
import type { Services } from './services.js';
import { createWorkspace } from './workspaces.js';
import { migratePostgres } from '../stores/postgres.js';
import { migrateClickhouse } from '../stores/clickhouse.js';
import { rotateSecretKey } from './secrets/rotate-secret-key.js';
import { seedCallLogs } from './logs/seed.js';

/**
 * The operator commands of `npm run admin`. They run either inside the service
 * (handed over DATA_DIR/admin.sock) or in the CLI's own process; both call this,
 * so the output is the same either way.
 */

/** What the operator's commands use: the stores, secrets, the spooled logs (seed-logs) and the change notices. */
export type AdminCommandServices = Pick<Services, 'db' | 'clickhouse' | 'config' | 'secrets' | 'audit' | 'callLogs' | 'alerts' | 'configChanges'>;

export interface AdminCommandHooks {
  onProgress?: (done: number, total: number) => void;
  /** Aborted when whoever asked is gone (the CLI hung up): a long command (seed-logs) stops, keeping what it did. */
  signal?: AbortSignal;
  /** The migrations applied when the stores were opened for this command (an offline CLI opens them itself). */
  appliedOnOpen?: MigrationsApplied;
}

/** Migrations by store, by name. */
export interface MigrationsApplied {
  postgres: string[];
  clickhouse: string[];
}

type Handlers = {
  [K in AdminCommandName]: (
    services: AdminCommandServices,
    args: z.output<(typeof commandSchemas)[K]>,
    hooks: AdminCommandHooks,
  ) => Promise<Record<string, unknown>>;
};

const handlers: Handlers = {
  'create-workspace': async ({ db }, a) =>
    createWorkspace(db, { name: a.name, adminEmail: a.adminEmail, partner: a.partner }) as unknown as Promise<Record<string, unknown>>,
  entitlement: async ({ db }, a) => {
    if (!(await findOrganization(db, a.org))) throw notFound('Workspace');
    if (a.action === 'grant') await grantEntitlement(db, a.org, a.key);
    else await revokeEntitlement(db, a.org, a.key);
    return { organizationGuid: a.org, key: a.key, granted: a.action === 'grant' };
  },
  'create-token': async ({ db }, a) => {
    const user = await db.selectFrom('users').select(['guid', 'organization_guid', 'is_active']).where('guid', '=', a.user).executeTakeFirst();
    if (!user) throw notFound('User');
    if (!user.is_active) throw new AppError('conflict', 'The user is deactivated.');
    const issued = await issueAccessToken(db, {
      organizationGuid: user.organization_guid,
      userGuid: user.guid,
      label: a.label,
      expiresInDays: a.expiresInDays,
    });
    return {
      id: issued.record.id,
      label: issued.record.label,
      prefix: issued.record.prefix,
      token: issued.token,
      alreadyExisted: issued.alreadyExisted,
      organizationGuid: user.organization_guid,
    };
  },
  // What it applied, the opening of the stores for this command included (a running service applied its own at its start).
  migrate: async (services, _a, hooks) => {
    const pg = await migratePostgres(services.db);
    const ch = await migrateClickhouse(services.clickhouse, { retentionDays: services.config.logRetentionDays, cluster: services.clickhouse.cluster });
    const before = hooks.appliedOnOpen ?? { postgres: [], clickhouse: [] };
    return { postgres: [...before.postgres, ...(pg.results ?? []).map((r) => r.migrationName)], clickhouse: [...before.clickhouse, ...ch] };
  },
  // Re-encrypts every secret under SECRET_KEY; the old key is given as PREVIOUS_SECRET_KEY.
  'rotate-secret-key': async ({ db, secrets }, a) => ({ ...(await rotateSecretKey(db, secrets, { organizationGuid: a.org })) }),
  'seed-logs': async (services, a, hooks) => {
    if (!(await findOrganization(services.db, a.org))) throw notFound('Workspace');
    return seedCallLogs(services, { organizationGuid: a.org, rows: a.rows, days: a.days, users: a.users, onProgress: hooks.onProgress, signal: hooks.signal });
  },
};

export async function runAdminCommand(
  services: AdminCommandServices,
  name: string,
  rawArgs: Record<string, unknown>,
  hooks: AdminCommandHooks = {},
): Promise<Record<string, unknown>> {
  const input = parseAdminCommand(name, rawArgs);
  // An unknown command is not audited: there is nothing it could have done.
  if (!input.command) throw input.refusal;
  const { command } = input;
  let result: Record<string, unknown>;
  try {
    if (input.refusal) throw input.refusal;
    result = await (handlers[command] as (s: AdminCommandServices, a: unknown, h: AdminCommandHooks) => Promise<Record<string, unknown>>)(
      services,
      input.args,
      hooks,
    );
  } catch (err) {
    const appError = toAppError(err);
    await auditCommand(services, command, rawArgs, {}, appError.code, appError.status);
    throw err;
  }
  await auditCommand(services, command, rawArgs, result, 'ok', 200);
  // Commands change workspaces behind the interface (e.g. an entitlement): caches must hear of it, like after an operation.
  const org = (input.args as { org?: string }).org;
  if (org) services.configChanges.changed(org);
  return result;
}

/** The operator's commands are audited like operations: surface cli, no acting user, the workspace they touched. */
async function auditCommand(
  services: Pick<Services, 'audit'>,
  command: AdminCommandName,
  args: Record<string, unknown>,
  result: Record<string, unknown>,
  outcome: string,
  status: number,
) {
  const org = [args.org, result.organizationGuid].find((v): v is string => typeof v === 'string' && isGuid(v)) ?? '';
  await services.audit.write([
    {
      organizationGuid: org,
      createdAt: Date.now(),
      actorUserGuid: null,
      actorTokenPrefix: null,
      origin: { surface: 'cli', sourceIp: null, userAgent: 'npm run admin' },
      operation: command,
      // What a command made is named in its result (create-workspace: organizationGuid, userGuid, roleGuid), not in its flags.
      targetGuids: [...new Set([...targetGuidsOf({ ...args, orgGuid: args.org, userGuid: args.user }, result), ...targetGuidsOf(result, null)])],
      outcome,
      status,
      request: args,
    },
  ]);
}
