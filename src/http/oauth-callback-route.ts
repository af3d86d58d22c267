import type { FastifyInstance } from 'fastify';
import { completeAuthorization, OAuthCallbackError, type OAuthCallbackServices } from '../core/servers/oauth-callback.js';
import { OAUTH_CALLBACK_PATH } from '../core/servers/oauth-client-metadata.js';

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page the human lands on, with a way back to the console's Servers page, where
 * the server's status shows. The link is relative to /oauth/callback, so it holds
 * behind a proxy that serves the service under a path prefix too.
 */
const page = (title: string, text: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>` +
  `<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p><a href="../console/#/servers">Back to the console's Servers page</a></p></body></html>`;

/**
 * GET /oauth/callback: where an upstream's authorization server sends the human
 * after approval. Not an admin operation (a browser calls it, with no token); the
 * state carried in the URL binds it to the user and server that started it.
 */
export function registerOAuthCallbackRoute(app: FastifyInstance, services: OAuthCallbackServices): void {
  // The URL carries an authorization code: keep it out of the request log.
  app.get(OAUTH_CALLBACK_PATH, { logLevel: 'warn' }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const param = (k: string) => (typeof query[k] === 'string' ? (query[k] as string) : undefined);
    // A page of text and one link: nothing to load, run or frame (the URL carried a code).
    reply
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .header('content-security-policy', "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .type('text/html; charset=utf-8');
    try {
      await completeAuthorization(services, { state: param('state'), code: param('code'), error: param('error'), iss: param('iss') });
      return reply.code(200).send(page('Authorization complete', 'The server is being validated now. You can close this window.'));
    } catch (err) {
      if (err instanceof OAuthCallbackError) return reply.code(400).send(page('Authorization failed', err.message));
      request.log.error({ err: err instanceof Error ? err.message : String(err) }, 'OAuth callback failed');
      return reply.code(500).send(page('Authorization failed', 'An unexpected error occurred. It has been logged.'));
    }
  });
}
