import { openJson, sealJson } from './sealed.js';

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

/** Seals a session into an id of visible ASCII (base64url), as MCP requires of session ids. */
export function sealSession(key: Buffer, session: GatewaySession): string {
  return sealJson(key, session);
}

/** Opens a session id; null when it is malformed, forged or sealed under another key. */
export function openSession(key: Buffer, id: string): GatewaySession | null {
  return openJson<GatewaySession>(key, id);
}

/** How many opened session ids a process remembers, and the longest one it keeps (a typical id is under 1 KiB). */
const REMEMBERED_SESSIONS = 5_000;
const REMEMBERED_ID_CHARS = 4_096;

/**
 * Session ids as the routes use them: sealed at initialize, opened on every later
 * request. Opening (AES-GCM) is the costliest step of a call's own work, and a
 * host sends the same id with every request of its session, so opened ids are
 * remembered (bounded in number and size, so that hosts declaring huge
 * capabilities cannot fill the memory; the oldest is forgotten first). That is
 * safe because an id is immutable: its content is authenticated, so the same
 * string always opens to the same session, and a forged or altered one never
 * enters the map. Sessions handed out are frozen, so no request can change what
 * another one sees.
 */
export class SessionIds {
  private readonly opened = new Map<string, GatewaySession>();

  constructor(private readonly key: Buffer) {}

  seal(session: GatewaySession): string {
    const id = sealSession(this.key, session);
    this.remember(id, session);
    return id;
  }

  open(id: string): GatewaySession | null {
    const known = this.opened.get(id);
    if (known) return known;
    const session = openSession(this.key, id);
    if (session) this.remember(id, session);
    return session;
  }

  private remember(id: string, session: GatewaySession): void {
    if (id.length > REMEMBERED_ID_CHARS) return;
    if (this.opened.size >= REMEMBERED_SESSIONS) this.opened.delete(this.opened.keys().next().value!);
    this.opened.set(id, deepFreeze(session));
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
