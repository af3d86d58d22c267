import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { authenticate } from '../core/auth/authenticate.js';
import { bearerToken, hashToken } from '../core/auth/tokens.js';
import { AppError, toAppError } from '../core/errors.js';
import { executeOperation } from '../core/executor.js';
import type { AnyOperation, Principal } from '../core/operation.js';
import { operations as allOperations } from '../core/operations/index.js';
import type { Services } from '../core/services.js';
import { registerGatewayRoutes } from '../gateway/routes.js';
import { buildToolList, createAdminMcpServer } from '../mcp/admin-tools.js';
import { createMetrics, type Metrics } from './metrics.js';
import { ADMIN_PREFIX, buildOpenApiDocument } from './openapi.js';
import { registerOAuthCallbackRoute } from './oauth-callback-route.js';
import { problemFromFastifyError, sendProblem } from './problem.js';
import { assembleInput } from './rest-input.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

export interface AppOptions {
  services: Services;
  operations?: readonly AnyOperation[];
  metrics?: Metrics;
  /** fastify logger options; tests pass false. */
  logger?: boolean | object;
}

const ONE_MIB = 1024 * 1024;

/**
 * Builds the HTTP application: REST routes and MCP tools generated from the operation
 * registry, the OpenAPI document, health and metrics. Does not listen (main.ts does),
 * so tests drive it with `inject`.
 */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { services } = opts;
  const operations = opts.operations ?? allOperations;
  const metrics = opts.metrics ?? createMetrics(services.metricsRegistry);
  const app = Fastify({
    logger: opts.logger ?? { level: services.config.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie'] },
    bodyLimit: ONE_MIB,
    // Ids in paths are UUIDs; anything longer is certainly not one of ours.
    routerOptions: { maxParamLength: 200 },
  });

  // An empty body with a JSON content type is an empty object, not an error: clients
  // commonly send it for POSTs that take no parameters.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('validation_failed', 'body: is not valid JSON', { errors: [{ path: 'body', message: 'is not valid JSON' }] }), undefined);
    }
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = problemFromFastifyError(err);
    if (appError.code === 'internal') request.log.error({ err }, 'unexpected error');
    return sendProblem(reply, appError);
  });
  app.setNotFoundHandler((request, reply) => sendProblem(reply, new AppError('not_found', `No route for ${request.method} ${request.url.split('?')[0]}`)));

  // One budget per token across the whole admin interface (REST and MCP together).
  await app.register(rateLimit, {
    global: true,
    allowList: (req) =>
      !req.url.startsWith(ADMIN_PREFIX) || req.url.startsWith(`${ADMIN_PREFIX}/reference`) || req.url.startsWith(`${ADMIN_PREFIX}/openapi.json`),
    max: services.config.adminRateLimitPerMinute,
    timeWindow: 60_000,
    // Keyed by token (hashed, never stored in clear), else by address.
    keyGenerator: (req) => {
      const token = bearerToken(req.headers.authorization);
      return token ? `t:${hashToken(token)}` : `ip:${req.ip}`;
    },
    errorResponseBuilder: (_req, ctx) => {
      const retryAfterSeconds = Math.max(1, Math.ceil(ctx.ttl / 1000));
      return new AppError('rate_limited', `Too many requests: at most ${ctx.max} a minute. Retry after ${retryAfterSeconds} s.`, { retryAfterSeconds });
    },
  });

  const authenticateRequest = async (request: FastifyRequest) => {
    request.principal = await authenticate(services, bearerToken(request.headers.authorization), 'access');
  };

  // REST: one route per operation, generated.
  for (const op of operations) {
    app.route({
      method: op.method,
      url: ADMIN_PREFIX + op.path,
      onRequest: authenticateRequest,
      handler: async (request, reply) => {
        const end = metrics.duration.startTimer({ operation: op.name, surface: 'rest' });
        try {
          const result = await executeOperation(op, { services, principal: request.principal! }, assembleInput(op, request));
          const status = typeof op.successStatus === 'function' ? op.successStatus(result) : (op.successStatus ?? 200);
          metrics.requests.inc({ operation: op.name, surface: 'rest', status });
          return reply.code(status).send(result);
        } catch (err) {
          const appError = toAppError(err);
          metrics.requests.inc({ operation: op.name, surface: 'rest', status: appError.status });
          if (appError.code === 'internal') request.log.error({ err, operation: op.name }, 'operation failed');
          return sendProblem(reply, appError);
        } finally {
          end();
        }
      },
    });
  }

  // MCP: the same operations as tools, over stateless Streamable HTTP.
  const tools = buildToolList(operations);
  const byName = new Map(operations.map((op) => [op.name, op]));
  app.post(`${ADMIN_PREFIX}/mcp`, { onRequest: authenticateRequest }, async (request, reply) => {
    const end = metrics.duration.startTimer({ operation: 'mcp', surface: 'mcp' });
    const server = createAdminMcpServer(byName, tools, { services, principal: request.principal! });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      end();
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: `${ADMIN_PREFIX}/mcp`,
      onRequest: authenticateRequest,
      handler: (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .send({ jsonrpc: '2.0', error: { code: -32000, message: 'This endpoint is stateless: send every message as a POST.' }, id: null }),
    });
  }

  // The API description and a browsable reference page.
  const openApiDocument = buildOpenApiDocument(operations, services.config.publicBaseUrl);
  app.get(`${ADMIN_PREFIX}/openapi.json`, async () => openApiDocument);
  await app.register(swagger, { mode: 'static', specification: { document: openApiDocument as never } });
  await app.register(swaggerUi, { routePrefix: `${ADMIN_PREFIX}/reference` });

  app.get('/healthz', async (_request, reply) => {
    const down: string[] = [];
    await Promise.all([
      services.db
        .selectNoFrom((eb) => eb.val(1).as('ok'))
        .execute()
        .catch(() => down.push('postgres')),
      services.clickhouse.client
        .ping()
        .then((r) => {
          if (!r.success) down.push('clickhouse');
        })
        .catch(() => down.push('clickhouse')),
    ]);
    if (down.length > 0) return reply.code(503).send({ status: 'unavailable', down });
    return { status: 'ok' };
  });
  registerOAuthCallbackRoute(app, services);
  registerGatewayRoutes(app, services);
  app.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  return app;
}
