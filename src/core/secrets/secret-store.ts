import type { ConfigDb } from '../../stores/postgres.js';
import { newGuid } from '../ids.js';
import { open, seal } from './envelope.js';

/**
 * Secrets in the `secrets` table, sealed under the service's key. Values go in as
 * JSON-able data (a headers map, an OAuth token set) and come out only here, to talk
 * to an upstream or a collector. Nothing in this file logs.
 */
export class SecretStore {
  constructor(private readonly key: Buffer) {}

  /** Seals `value` into a new secret record and returns its guid. */
  async put(db: ConfigDb, organizationGuid: string, value: unknown): Promise<string> {
    const guid = newGuid();
    const env = seal(this.key, guid, JSON.stringify(value));
    await db
      .insertInto('secrets')
      .values({ guid, organization_guid: organizationGuid, key_id: env.keyId, nonce: env.nonce, ciphertext: env.ciphertext, auth_tag: env.authTag })
      .execute();
    return guid;
  }

  /** Replaces the value of an existing secret in place (same guid). */
  async replace(db: ConfigDb, organizationGuid: string, guid: string, value: unknown): Promise<void> {
    const env = seal(this.key, guid, JSON.stringify(value));
    await db
      .updateTable('secrets')
      .set({ key_id: env.keyId, nonce: env.nonce, ciphertext: env.ciphertext, auth_tag: env.authTag, updated_at: new Date() })
      .where('guid', '=', guid)
      .where('organization_guid', '=', organizationGuid)
      .execute();
  }

  /** Opens a secret of the workspace; undefined when there is none. */
  async get<T>(db: ConfigDb, organizationGuid: string, guid: string): Promise<T | undefined> {
    const row = await db.selectFrom('secrets').selectAll().where('guid', '=', guid).where('organization_guid', '=', organizationGuid).executeTakeFirst();
    if (!row) return undefined;
    return JSON.parse(open(this.key, row.guid, { keyId: row.key_id, nonce: row.nonce, ciphertext: row.ciphertext, authTag: row.auth_tag })) as T;
  }
}
