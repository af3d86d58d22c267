import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * A host's MCP session, carried entirely in its session id so that any replica
 * can serve any request of it: the connection it belongs to, what was negotiated
 * with the host, and the session each upstream opened for it. Sealed with
 * AES-256-GCM under a key derived from SECRET_KEY: a host can neither read the
 * upstream session ids nor forge a session.
 */
export interface GatewaySession {
  /** A short random id for the call logs (mcp.session.id): the sealed id itself is long and opaque. */
  id: string;
  /** The connection the session was opened by; another connection's token cannot use it. */
  connectionGuid: string;
  protocolVersion: string;
  /** What the host declared at initialize (sampling, elicitation, roots), passed to upstreams opened later. */
  clientCapabilities: Record<string, unknown>;
  clientInfo: { name: string; version: string } & Record<string, unknown>;
  /** assignment guid -> the upstream's session id (absent for stateless upstreams) and negotiated version. */
  upstreams: Record<string, { sessionId?: string; protocolVersion?: string }>;
  createdAt: number;
}

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** Seals a session into an id of visible ASCII (base64url), as MCP requires of session ids. */
export function sealSession(key: Buffer, session: GatewaySession): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(JSON.stringify(session), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]).toString('base64url');
}

/** Opens a session id; null when it is malformed, forged or sealed under another key. */
export function openSession(key: Buffer, id: string): GatewaySession | null {
  try {
    const raw = Buffer.from(id, 'base64url');
    if (raw.length < 1 + NONCE_BYTES + TAG_BYTES + 2 || raw[0] !== VERSION) return null;
    const nonce = raw.subarray(1, 1 + NONCE_BYTES);
    const tag = raw.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAuthTag(tag);
    const text = Buffer.concat([decipher.update(raw.subarray(1 + NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as GatewaySession;
  } catch {
    return null;
  }
}
