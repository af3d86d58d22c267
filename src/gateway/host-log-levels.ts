import type { JSONRPCMessage, LoggingLevel } from '@modelcontextprotocol/server';
import type { HostIdentity } from './modern-upstream.js';
import type { GatewaySession } from './session-id.js';
import { PerSessionStore } from './session-store.js';
import { postToUpstream, type UpstreamRequest } from './upstream-http.js';

/** Sessions whose level a process remembers (the oldest set is forgotten first). */
const REMEMBERED_LEVELS = 10_000;

/**
 * The log level each 2025 host set with logging/setLevel, for the 2026-07-28
 * upstreams it uses later: revision 2026-07-28 has no session state, so every request
 * to such an upstream carries the level in its envelope, and without one the upstream
 * sends no log messages at all. The host's session is sealed into its id at
 * initialize, and a level set later cannot change the id, so the level is kept here
 * (session-store.ts): per process, bounded, for at most a session's life. Behind several replicas a
 * request that reaches a replica other than the one that served setLevel carries no
 * level (docs/decisions.md, Gateway).
 */
export class HostLogLevels {
  private readonly levels = new PerSessionStore<LoggingLevel>(REMEMBERED_LEVELS);

  set(session: Pick<GatewaySession, 'connectionGuid' | 'id' | 'createdAt'>, level: LoggingLevel): void {
    this.levels.set(session, level);
  }

  /** The level the session's host set in this process; undefined when it set none here (or its session is over). */
  get(session: Pick<GatewaySession, 'connectionGuid' | 'id'>): LoggingLevel | undefined {
    return this.levels.get(session);
  }

  /** A 2025 host as a 2026-07-28 upstream hears of it with each request: its session's info and capabilities, and the level it set. */
  identityOf(session: GatewaySession): HostIdentity {
    const logLevel = this.get(session);
    return { clientInfo: session.clientInfo, clientCapabilities: session.clientCapabilities, ...(logLevel !== undefined ? { logLevel } : {}) };
  }

  /** Forgets an ended session's level. */
  forget(session: Pick<GatewaySession, 'connectionGuid' | 'id'>): void {
    this.levels.forget(session);
  }
}

/**
 * Tells a 2025 upstream session the host's level (logging/setLevel) right after it
 * was opened for a 2026-07-28 host whose envelope has one (its pooled sessions are
 * keyed by its identity, level included, so one session never needs two levels;
 * upstream-adapters/streamable-pooled.ts). Never throws: a level the upstream refuses
 * (a server without logging) or cannot take now only means fewer log messages, not a
 * failed call; false then.
 */
export async function setUpstreamLogLevel(req: UpstreamRequest, level: LoggingLevel): Promise<boolean> {
  const message = { jsonrpc: '2.0', id: 'svcgw-log-level', method: 'logging/setLevel', params: { level } } as JSONRPCMessage;
  try {
    const reply = await postToUpstream(req, message);
    let accepted = false;
    for await (const answer of reply.messages) if ('result' in answer) accepted = true;
    return accepted;
  } catch {
    return false;
  }
}
