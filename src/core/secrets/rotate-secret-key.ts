import type { ConfigDb } from '../../stores/postgres.js';
import type { SecretStore } from './secret-store.js';

export interface RotationReport {
  /** Id of the key every rotated secret is now sealed with. */
  keyId: string;
  rotated: number;
  alreadyCurrent: number;
  /** Guids of secrets sealed under a key that is not configured: left as they are. */
  unreadable: string[];
}

const BATCH = 200;

/**
 * Re-encrypts every secret not yet sealed under the current key (SECRET_KEY). The
 * old key must be known to the store (PREVIOUS_SECRET_KEY). Each row is rewritten
 * only if it still has the key id it was read with, so a concurrent write wins
 * rather than being overwritten with stale data. Safe to run again: rows already
 * under the current key are skipped. `organizationGuid` limits it to one workspace.
 */
export async function rotateSecretKey(db: ConfigDb, store: SecretStore, opts: { organizationGuid?: string } = {}): Promise<RotationReport> {
  const report: RotationReport = { keyId: store.currentKeyId, rotated: 0, alreadyCurrent: 0, unreadable: [] };
  const scoped = <Q extends { where: (...args: any[]) => Q }>(q: Q): Q =>
    opts.organizationGuid ? q.where('organization_guid', '=', opts.organizationGuid) : q;
  report.alreadyCurrent = Number(
    (
      await scoped(
        db
          .selectFrom('secrets')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('key_id', '=', store.currentKeyId),
      ).executeTakeFirstOrThrow()
    ).n,
  );
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows = await scoped(db.selectFrom('secrets').selectAll().where('key_id', '!=', store.currentKeyId).where('guid', '>', after))
      .orderBy('guid')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    for (const row of rows) {
      let plaintext: string;
      try {
        plaintext = store.openEnvelope(row.guid, { keyId: row.key_id, nonce: row.nonce, ciphertext: row.ciphertext, authTag: row.auth_tag });
      } catch {
        report.unreadable.push(row.guid);
        continue;
      }
      const env = store.sealFor(row.guid, plaintext);
      const updated = await db
        .updateTable('secrets')
        .set({ key_id: env.keyId, nonce: env.nonce, ciphertext: env.ciphertext, auth_tag: env.authTag, updated_at: new Date() })
        .where('guid', '=', row.guid)
        .where('key_id', '=', row.key_id)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) > 0) report.rotated += 1;
    }
    after = rows[rows.length - 1]!.guid;
  }
  return report;
}
