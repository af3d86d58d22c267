import { ERRORS } from './call-model.js';
import { MODERN_REVISION } from './modern-upstream.js';
import { UpstreamHttpError } from './upstream-http.js';

/** What a 2025 SDK transport answers (-32000, HTTP 400) to a revision it does not know. */
const UNSUPPORTED_TEXT = /unsupported protocol version/i;
/** What a sessionful 2025 upstream answers a request without a session: it is no 2026-07-28 upstream. */
const SESSION_TEXT = /session id|not initialized/i;
/** The code 2025 SDK transports answer their own refusals with. */
const SESSION_TRANSPORT_ERROR = -32000;

/**
 * Whether an upstream's failure says it does not speak the revision the gateway
 * used (`spoken`: MODERN_REVISION for the envelope, anything else for initialize
 * and 2025 sessions), so the other revision is worth one try: the revision's
 * -32022, or a 2025 transport's "Unsupported protocol version" (HTTP 400); for a
 * request in the 2026-07-28 envelope also a 2025 upstream's demand for a session.
 */
export function refusesRevision(err: unknown, spoken: string): boolean {
  if (err instanceof UpstreamHttpError) {
    if (err.status !== 400) return false;
    const error = errorIn(err.body);
    if (!error) return false;
    if (error.code === ERRORS.unsupportedProtocolVersion || UNSUPPORTED_TEXT.test(error.message)) return true;
    return spoken === MODERN_REVISION && error.code === SESSION_TRANSPORT_ERROR && SESSION_TEXT.test(error.message);
  }
  // An initialize answered in JSON-RPC (HTTP 200) with the refusal: upstream-http.ts throws its message.
  return spoken !== MODERN_REVISION && err instanceof Error && UNSUPPORTED_TEXT.test(err.message);
}

function errorIn(body: string): { code: unknown; message: string } | null {
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    return error ? { code: error.code, message: typeof error.message === 'string' ? error.message : '' } : null;
  } catch {
    return null;
  }
}
