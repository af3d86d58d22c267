import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An MCP endpoint (the admin endpoint, a gateway's): a browser's foreign Origin is refused. */
    mcpEndpoint?: boolean;
  }
}

/**
 * DNS-rebinding protection of the MCP endpoints (contract 8.1; MCP 2025-11-25 asks
 * for a 403): a request whose Origin is neither PUBLIC_BASE_URL's nor listed in
 * ALLOWED_ORIGINS is refused before authentication; a request without Origin (every
 * non-browser host) is served. The answer is a JSON-RPC error, the language of
 * these endpoints, with id null (no message was read).
 */
export function registerOriginCheck(app: FastifyInstance, allowedOrigins: readonly string[]): void {
  const allowed = new Set(allowedOrigins);
  app.addHook('onRequest', async (request, reply) => {
    if (!request.routeOptions.config.mcpEndpoint) return;
    const origin = request.headers.origin;
    if (origin === undefined || allowed.has(origin)) return;
    return reply.code(403).send({
      jsonrpc: '2.0',
      error: { code: -32000, message: `Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed: see ALLOWED_ORIGINS.` },
      id: null,
    });
  });
}
