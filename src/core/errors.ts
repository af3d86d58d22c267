/**
 * The one error taxonomy of the interface (contract section 2). Every failure a
 * caller can see is an AppError with a closed code; REST renders it as problem+json,
 * MCP as an isError tool result carrying the same object.
 */
import { isStoreUnreachable } from '../stores/store-errors.js';

/** The contract's closed set of problem codes (section 2), plus `unavailable` (a store away, decisions.md). */
export const ERROR_CODES = [
  'validation_failed',
  'unauthenticated',
  'entitlement_required',
  'missing_capability',
  'not_creator',
  'not_found',
  'conflict',
  'identity_selection_required',
  'rate_limited',
  'internal',
  'unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export function codeToStatus(code: ErrorCode): number {
  switch (code) {
    case 'validation_failed':
      return 400;
    case 'unauthenticated':
      return 401;
    case 'entitlement_required':
    case 'missing_capability':
    case 'not_creator':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
      return 409;
    case 'identity_selection_required':
      return 422;
    case 'rate_limited':
      return 429;
    case 'internal':
      return 500;
    case 'unavailable':
      return 503;
  }
}

const TITLES: Record<ErrorCode, string> = {
  validation_failed: 'Validation failed',
  unauthenticated: 'Unauthenticated',
  entitlement_required: 'Entitlement required',
  missing_capability: 'Missing capability',
  not_creator: 'Not the creator',
  not_found: 'Not found',
  conflict: 'Conflict',
  identity_selection_required: 'Identity selection required',
  rate_limited: 'Rate limited',
  internal: 'Internal error',
  unavailable: 'Service unavailable',
};

export interface FieldError {
  path: string;
  message: string;
}

/** Problem details (RFC 9457) plus the contract's `code` and per-code extra members. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  [extra: string]: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly extras: Record<string, unknown>;

  constructor(code: ErrorCode, detail: string, extras: Record<string, unknown> = {}) {
    super(detail);
    this.code = code;
    this.extras = extras;
  }

  get status(): number {
    return codeToStatus(this.code);
  }

  toProblem(): Problem {
    return {
      type: `urn:svc-admin:problem:${this.code}`,
      title: TITLES[this.code],
      status: this.status,
      detail: this.message,
      code: this.code,
      ...this.extras,
    };
  }
}

/** The most field errors a problem lists: a request can hold thousands of bad keys, and its answer need not repeat them all. */
const MAX_LISTED_ERRORS = 50;

/** The longest field path a problem repeats (a map key is the caller's text, of any length). */
const MAX_PATH_LENGTH = 1_000;

/** The message of a field whose name is empty (`?=`, `{"": 1}`): its path, "", would otherwise read as the whole input. */
export const EMPTY_NAME_REFUSED = 'a field with an empty name is not allowed';

export const validationFailed = (errors: FieldError[]): AppError => {
  const listed = errors.slice(0, MAX_LISTED_ERRORS).map((e) => (e.path.length > MAX_PATH_LENGTH ? { ...e, path: `${e.path.slice(0, MAX_PATH_LENGTH)}…` } : e));
  const paths = listed.map((e) => e.path || (e.message === EMPTY_NAME_REFUSED ? '(a field with an empty name)' : 'input')).join(', ');
  return new AppError(
    'validation_failed',
    errors.length === 1
      ? `${listed[0]!.path || 'input'}: ${listed[0]!.message}`
      : errors.length > listed.length
        ? `${errors.length} invalid parameters, the first ${listed.length}: ${paths}`
        : `${errors.length} invalid parameters: ${paths}`,
    { errors: listed },
  );
};

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);

export const conflict = (detail: string): AppError => new AppError('conflict', detail);

/** Seconds a caller is asked to wait while a store is away (a restart or failover takes a few). */
export const STORE_RETRY_AFTER_SECONDS = 5;

/**
 * A store that cannot be reached (a server restarting, failing over, dropping connections) is a 503 the caller
 * may retry; any other unexpected error becomes a bare 500. Neither carries a stack, SQL or a secret.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isStoreUnreachable(err))
    return new AppError('unavailable', 'A store the service needs cannot be reached right now: try again shortly.', {
      retryAfterSeconds: STORE_RETRY_AFTER_SECONDS,
    });
  return new AppError('internal', 'An unexpected error occurred. It has been logged.');
}
