import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { countOrganizations } from '../core/repositories/organizations.js';
import { createWorkspace, type CreatedWorkspace } from '../core/workspaces.js';
import type { ConfigDb } from '../stores/postgres.js';

/** Arbitrary but fixed: serialises first-start bootstrap across processes sharing one database. */
const BOOTSTRAP_LOCK = 7_400_117;

/**
 * On an empty database, creates workspace Default with an Administrator role, the
 * user admin@localhost and the `initial-admin` token, and writes that token to
 * DATA_DIR/initial-admin-token (0600). Returns it, or null when the database already
 * had a workspace (later starts create nothing).
 */
export async function bootstrapIfEmpty(db: ConfigDb, dataDir: string): Promise<CreatedWorkspace | null> {
  const created = await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`.execute(trx);
    if ((await countOrganizations(trx)) > 0) return null;
    return createWorkspace(trx, { name: 'Default', adminEmail: 'admin@localhost', tokenLabel: 'initial-admin' });
  });
  if (created) {
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'initial-admin-token'), created.token + '\n', { mode: 0o600 });
  }
  return created;
}
