import { hash, randomBytes } from 'node:crypto';

export type TokenKind = 'access' | 'gateway';

const KIND_MARK: Record<TokenKind, string> = { access: 'svcp', gateway: 'svcg' };
const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Unbiased random base62 string (rejection sampling on bytes). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export interface MintedToken {
  token: string;
  prefix: string;
  hash: string;
}

/**
 * Mints `svcp_<prefix>_<secret>` (admin access) or `svcg_<prefix>_<secret>` (gateway).
 * The prefix is a recognisable, non-secret handle; the 43-character secret carries
 * 256 bits. Only the SHA-256 of the whole token is ever stored.
 */
export function mintToken(kind: TokenKind): MintedToken {
  const prefix = randomBase62(8);
  const token = `${KIND_MARK[kind]}_${prefix}_${randomBase62(43)}`;
  return { token, prefix, hash: hashToken(token) };
}

export const hashToken = (token: string): string => hash('sha256', token, 'hex');

const TOKEN_SHAPE = /^(svcp|svcg)_[A-Za-z0-9]{8}_[A-Za-z0-9]{43}$/;

/** The kind of a well-formed token, or null for anything else (which then fails as unauthenticated). */
export function tokenKindOf(token: string): TokenKind | null {
  const m = TOKEN_SHAPE.exec(token);
  if (!m) return null;
  return m[1] === 'svcp' ? 'access' : 'gateway';
}

/** Extracts the token from an `Authorization: Bearer <token>` header value. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/**
 * The `WWW-Authenticate` challenge of a 401 (RFC 9110 section 15.5.2: a 401 must carry
 * one), the same on the admin interface and at a gateway. RFC 6750 section 3.1: a
 * request that sent no credential gets the bare scheme, one whose token was refused
 * gets `error="invalid_token"`; neither says why (one answer for every reason).
 */
export const bearerChallenge = (authorizationHeader: string | undefined): string => (authorizationHeader?.trim() ? 'Bearer error="invalid_token"' : 'Bearer');
