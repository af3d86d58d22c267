import type { FastifyError, FastifyReply } from 'fastify';
import { AppError, toAppError, validationFailed } from '../core/errors.js';

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  const problem = error.toProblem();
  if (error.code === 'rate_limited' && typeof problem.retryAfterSeconds === 'number') {
    void reply.header('retry-after', String(problem.retryAfterSeconds));
  }
  return reply.code(problem.status).type('application/problem+json').send(problem);
}

/**
 * Maps what fastify itself rejects (bad JSON, oversize bodies, wrong content type)
 * onto the contract's codes, so no malformed request ever turns into a 500.
 */
export function problemFromFastifyError(err: FastifyError): AppError {
  if (err instanceof AppError) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return validationFailed([{ path: 'body', message: 'is not valid JSON' }]);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return validationFailed([{ path: 'body', message: 'is larger than the 1 MiB limit' }]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return validationFailed([{ path: 'body', message: 'must be sent as content-type application/json' }]);
    default:
      break;
  }
  if (err instanceof SyntaxError) return validationFailed([{ path: 'body', message: 'is not valid JSON' }]);
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return validationFailed([{ path: 'request', message: err.message }]);
  }
  return toAppError(err);
}
