import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { CLIENT_METADATA_PATH, clientMetadataDocumentOf } from '../core/servers/oauth-client-metadata.js';

/**
 * GET /oauth/client-metadata.json: the service's Client ID Metadata Document, fetched
 * by an upstream's authorization server when the service uses this URL as its
 * client_id. Public (no token: the server calls it), JSON, nothing secret in it.
 */
export function registerOAuthClientMetadataRoute(app: FastifyInstance, config: Pick<Config, 'publicBaseUrl'>): void {
  const document = clientMetadataDocumentOf(config);
  app.get(CLIENT_METADATA_PATH, async (_request, reply) =>
    // Authorization servers may cache it (the specification lets them honour HTTP caching); an hour bounds a stale redirect URI.
    reply.header('cache-control', 'public, max-age=3600').type('application/json; charset=utf-8').send(document),
  );
}
