import type { ConfigDb } from '../../stores/postgres.js';
import { newGuid } from '../ids.js';
import { keyIdOf, open, seal, SecretKeyMismatchError, type Envelope } from './envelope.js';

/**
 * Secrets in the `secrets` table, sealed under the service's key. Values go in as
 * JSON-able data (a headers map, an OAuth token set) and come out only here, to talk
 * to an upstream or a collector. Nothing in this file logs.
 *
 * Envelopes always get sealed under the current key; they open under the current key
 * or any previous one (PREVIOUS_SECRET_KEY), found by the key id the envelope
 * carries, so the service keeps working while `rotate-secret-key` re-encrypts.
 */
export class SecretStore {
  private readonly keysById: Map<string, Buffer>;
  /** Id of the key new envelopes are sealed with. */
  readonly currentKeyId: string;

  constructor(
    private readonly key: Buffer,
    previousKeys: readonly Buffer[] = [],
  ) {
    this.currentKeyId = keyIdOf(key);
    this.keysById = new Map([...previousKeys, key].map((k) => [keyIdOf(k), k]));
  }

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
    return JSON.parse(this.openEnvelope(row.guid, { keyId: row.key_id, nonce: row.nonce, ciphertext: row.ciphertext, authTag: row.auth_tag })) as T;
  }

  /** Opens an envelope under whichever known key sealed it. */
  openEnvelope(recordGuid: string, envelope: Envelope): string {
    const key = this.keysById.get(envelope.keyId);
    if (!key)
      throw new SecretKeyMismatchError(`secret ${recordGuid} was sealed with key ${envelope.keyId}, which is neither SECRET_KEY nor a PREVIOUS_SECRET_KEY`);
    return open(key, recordGuid, envelope);
  }

  /** Seals plaintext for an existing record under the current key (used by key rotation). */
  sealFor(recordGuid: string, plaintext: string): Envelope {
    return seal(this.key, recordGuid, plaintext);
  }
}
