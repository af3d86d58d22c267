import type { FastifyError, FastifyReply } from 'fastify';
import { bearerChallenge } from '../core/auth/tokens.js';
import { AppError, toAppError, validationFailed } from '../core/errors.js';

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  const problem = error.toProblem();
  if ((error.code === 'rate_limited' || error.code === 'unavailable') && typeof problem.retryAfterSeconds === 'number') {
    void reply.header('retry-after', String(problem.retryAfterSeconds));
  }
  if (error.code === 'unauthenticated') void reply.header('www-authenticate', bearerChallenge(reply.request.headers.authorization));
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

/**
 * The answer to a request Node's HTTP parser refused (fastify never sees it): still a
 * problem+json body with the contract's shape, then the connection is closed.
 * Headers over the limit are a 431, a request line too long a 414, anything else 400.
 */
export function answerClientError(error: Error & { code?: string }, socket: import('node:stream').Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const [status, title, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request header fields too large', 'The request headers exceed the size this service accepts.']
      : error.code === 'HPE_URI_TOO_LONG'
        ? [414, 'URI too long', 'The request path exceeds the length this service accepts.']
        : [400, 'Validation failed', 'The request is not valid HTTP.'];
  const body = JSON.stringify({
    type: 'urn:svc-admin:problem:validation_failed',
    title,
    status,
    detail,
    code: 'validation_failed',
    errors: [{ path: 'request', message: detail }],
  });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
