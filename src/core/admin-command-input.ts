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

export const unknownCommand = () => validationFailed([{ path: 'command', message: `unknown command; one of ${ADMIN_COMMANDS.join(', ')}` }]);

/**
 * Why the command or its arguments are refused, or null: the check runAdminCommand
 * makes, for a CLI that answers bad input before it opens the stores (seconds, and a
 * DATA_DIR made for nothing).
 */
export function adminCommandRefusal(name: string, rawArgs: Record<string, unknown>): AppError | null {
  if (!(name in commandSchemas)) return unknownCommand();
  const parsed = commandSchemas[name as AdminCommandName].safeParse(rawArgs);
  return parsed.success ? null : validationFailed(zodFieldErrors(parsed.error));
}
