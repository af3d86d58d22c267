import type { FastifyRequest } from 'fastify';
import type { AuditSurface, RequestOrigin } from '../core/audit/audit-record.js';

/** The audit log's view of an HTTP request: the surface it came in on, the peer address and the user agent. */
export function originOf(request: FastifyRequest, surface: AuditSurface): RequestOrigin {
  const userAgent = request.headers['user-agent'];
  return { surface, sourceIp: request.ip ?? null, userAgent: typeof userAgent === 'string' ? userAgent : null };
}
