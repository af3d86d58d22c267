import { conflict } from './errors.js';
import { countRoleAdmins, ROLE_ADMIN_CAPABILITIES } from './repositories/roles.js';
import type { ConfigDb } from '../stores/postgres.js';

/**
 * Runs a change to people or roles in one transaction, refused (409, nothing changed)
 * when it would leave the workspace with no active user holding the capabilities that
 * give roles back: no operation, and no operator command, could mend that.
 */
export async function keepingARoleAdmin<T>(db: ConfigDb, organizationGuid: string, change: (trx: ConfigDb) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const before = await countRoleAdmins(trx, organizationGuid);
    const result = await change(trx);
    if (before > 0 && (await countRoleAdmins(trx, organizationGuid)) === 0)
      throw conflict(
        `This would leave no active user of the workspace holding ${ROLE_ADMIN_CAPABILITIES.join(' and ')}, and nobody could give roles back: give another active user such a role first.`,
      );
    return result;
  });
}
