import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM envelopes for secrets at rest (contract section 7): a random 96-bit
 * nonce per record, the record's guid as associated data (so a ciphertext moved to
 * another record fails to open), and the id of the key that sealed it, so keys can
 * be rotated and old envelopes still found.
 */
export interface Envelope {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  authTag: Buffer;
}

/** A short, non-secret fingerprint of a key: which key sealed an envelope. */
export const keyIdOf = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 16);

export function seal(key: Buffer, recordGuid: string, plaintext: string): Envelope {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(recordGuid, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { keyId: keyIdOf(key), nonce, ciphertext, authTag: cipher.getAuthTag() };
}

export class SecretKeyMismatchError extends Error {}

/** Opens an envelope; throws when it was sealed under another key or has been tampered with. */
export function open(key: Buffer, recordGuid: string, envelope: Envelope): string {
  if (envelope.keyId !== keyIdOf(key)) {
    throw new SecretKeyMismatchError(`secret ${recordGuid} was sealed with key ${envelope.keyId}, not the configured key ${keyIdOf(key)}`);
  }
  const decipher = createDecipheriv('aes-256-gcm', key, envelope.nonce);
  decipher.setAAD(Buffer.from(recordGuid, 'utf8'));
  decipher.setAuthTag(envelope.authTag);
  return Buffer.concat([decipher.update(envelope.ciphertext), decipher.final()]).toString('utf8');
}
