/** Network failures reaching a store server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** SQLSTATEs of a server that is away: class 08 (connection exception), shutdown and start-up (57P01-57P03), too many connections. */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;
/** What pg, pg-pool, PGlite and Kysely say when the connection is gone or the store was closed. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Cannot use a pool after calling end|PGlite is clos(ed|ing)|driver has already been destroyed|Client has encountered a connection error/i;

/**
 * Whether an error says a store could not be reached (a server down, restarting or
 * dropping connections; an embedded store closed) rather than that a statement was
 * wrong. Callers answer the first with 503 (try again shortly) and the second as
 * the defect it is (500).
 */
export function isStoreUnreachable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  // pg reports a refused connection to every address of a name as an AggregateError.
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnreachable(x, depth + 1))) return true;
  return isStoreUnreachable(e.cause, depth + 1);
}

/**
 * How long past its TTL a cached entry may still serve while the store cannot be
 * reached: the gateway keeps serving the callers and routes it served (a change
 * notice still drops a workspace's entries at once), and refuses the rest with a 503.
 */
export const STALE_WHILE_STORE_AWAY_MS = 5 * 60_000;
