import { z } from 'zod';
import { ADMIN_ENTITLEMENT, zodFieldErrors } from './executor.js';
import { validationFailed, type AppError } from './errors.js';
import { isGuid } from './ids.js';

/**
 * The operator commands' names and arguments, apart from what carries them out
 * (src/core/admin-commands.ts): the CLI checks a command's input with these before it
 * loads the stores' modules.
 */

const Guid = z.string().refine(isGuid, 'must be a guid');

export const commandSchemas = {
  'create-workspace': z.strictObject({ name: z.string().trim().min(1), adminEmail: z.email(), partner: z.boolean().default(false) }),
  entitlement: z.strictObject({ action: z.enum(['grant', 'revoke']), org: Guid, key: z.literal(ADMIN_ENTITLEMENT) }),
  'create-token': z.strictObject({ user: Guid, label: z.string().trim().min(1).max(200), expiresInDays: z.number().int().min(0).max(90).default(0) }),
  migrate: z.strictObject({}),
  'rotate-secret-key': z.strictObject({ org: Guid.optional() }),
  'seed-logs': z.strictObject({
    org: Guid,
    rows: z.number().int().min(1).max(1_000_000_000),
    days: z.number().int().min(1).max(3650).default(7),
    users: z.number().int().min(1).max(100_000).optional(),
  }),
} as const;

export type AdminCommandName = keyof typeof commandSchemas;
export const ADMIN_COMMANDS = Object.keys(commandSchemas) as AdminCommandName[];

/** A command's input: its name known and its arguments parsed, or why they are refused (`command` set when only the arguments are). */
export type AdminCommandInput =
  { command: AdminCommandName; args: Record<string, unknown>; refusal?: undefined } | { command?: AdminCommandName; args?: undefined; refusal: AppError };

/**
 * The one check of a command's input: runAdminCommand makes it before it runs the
 * command, and a CLI with no service to hand it to before it opens the stores (seconds,
 * and a DATA_DIR made for nothing).
 */
export function parseAdminCommand(name: string, rawArgs: Record<string, unknown>): AdminCommandInput {
  if (!(name in commandSchemas)) return { refusal: validationFailed([{ path: 'command', message: `unknown command; one of ${ADMIN_COMMANDS.join(', ')}` }]) };
  const command = name as AdminCommandName;
  const parsed = commandSchemas[command].safeParse(rawArgs);
  return parsed.success ? { command, args: parsed.data } : { command, refusal: validationFailed(zodFieldErrors(parsed.error)) };
}
