import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Values the gateway hands to a host and takes back later (a session id, a
 * `requestState`): sealed with AES-256-GCM, so a host can neither read what is
 * inside nor forge or alter it. Each use has its own key (derived from SECRET_KEY
 * for that use alone), so a value sealed for one use never opens as another.
 */
const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Seals a JSON value into visible ASCII (base64url): a version byte, the nonce, the tag, the ciphertext. */
export function sealJson(key: Buffer, value: unknown): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]).toString('base64url');
}

/** Opens a sealed value; null when it is malformed, forged, altered or sealed under another key. */
export function openJson<T>(key: Buffer, sealed: string): T | null {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    // Only the canonical encoding opens: base64url decoding ignores padding and stray characters, so `<value>==` would.
    if (raw.toString('base64url') !== sealed) return null;
    if (raw.length < 1 + NONCE_BYTES + TAG_BYTES + 2 || raw[0] !== VERSION) return null;
    const nonce = raw.subarray(1, 1 + NONCE_BYTES);
    const tag = raw.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAuthTag(tag);
    const text = Buffer.concat([decipher.update(raw.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
