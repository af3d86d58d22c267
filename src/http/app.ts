import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { authenticate } from '../core/auth/authenticate.js';
import { bearerToken, hashToken } from '../core/auth/tokens.js';
import { AppError, toAppError } from '../core/errors.js';
import { SERVICE_LOG_REDACTION } from '../core/redaction.js';
import { executeOperation } from '../core/executor.js';
import { successStatusOf, type AnyOperation, type OperationContext, type Principal } from '../core/operation.js';
import { operations as allOperations } from '../core/operations/index.js';
import type { Services } from '../core/services.js';
import { registerGatewayRoutes } from '../gateway/routes.js';
import { createAdminMcpHandler } from '../mcp/admin-tools.js';
import { adminBatchRefusal, screenMessages } from '../mcp/admin-batch.js';
import { asJsonResponse, messagesOfResponse } from '../mcp/sdk-response.js';
import { acceptsEventStream, acceptsJson } from '../mcp/accept.js';
import { auditRefusedToolCalls } from '../mcp/admin-refused-calls.js';
import { unsupportedProtocolVersion } from '../mcp/protocol-version.js';
import { isModernMessage } from '../mcp/request-revision.js';
import { sendWebResponse, toWebRequest } from './web-request.js';
import { createMetrics, type Metrics } from './metrics.js';
import { ADMIN_MCP_PATH, ADMIN_PREFIX, buildOpenApiDocument } from './openapi.js';
import { registerOAuthCallbackRoute } from './oauth-callback-route.js';
import { registerOAuthClientMetadataRoute } from './oauth-client-metadata-route.js';
import { answerClientError, problemFromFastifyError, sendProblem } from './problem.js';
import { assembleInput, type RestInput } from './rest-input.js';
import { ADMIN_REFUSED_KEYS, GATEWAY_REFUSED_KEYS, NO_REFUSED_KEYS, parseJsonBody, refuseKeysOfMcpMessage } from './json-body.js';
import { originOf } from './request-origin.js';
import { registerOriginCheck } from './origin-check.js';
import { registerConsoleRoute } from './console-route.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** The admin operation a REST route serves. */
    operation?: AnyOperation;
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
/** The ids in paths are UUIDs; anything longer is certainly not one of ours. */
const MAX_PARAM_LENGTH = 200;

/** A request's path as a problem names it: not echoed whole, since a long one (up to the 8 KB request line) is cut. */
const namedPath = (url: string): string => {
  const path = url.split('?')[0]!;
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
};

/** How long a client may take to send a whole request (headers and body). */
export const REQUEST_ARRIVAL_MS = 60_000;

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
    logger: opts.logger ?? { level: services.config.logLevel, redact: SERVICE_LOG_REDACTION },
    bodyLimit: ONE_MIB,
    // A request must arrive whole within a minute: a client sending its body a byte at a time, unauthenticated, must
    // not hold a connection for ever (fastify's default is no limit). Responses (event streams) are not bounded by it.
    requestTimeout: REQUEST_ARRIVAL_MS,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A path fastify cannot decode (%ZZ, an overlong UTF-8 form), or whose id is past the router's limit, names no
    // resource: the contract's 404, as problem+json, and the path is not echoed whole.
    frameworkErrors: (error, request, reply) => {
      const appError =
        error.code === 'FST_ERR_BAD_URL'
          ? new AppError('not_found', 'The path is not a valid URL: it names no resource.')
          : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? new AppError('not_found', `No resource has the id in ${namedPath(request.url)}: ids are at most ${MAX_PARAM_LENGTH} characters.`)
            : problemFromFastifyError(error);
      return sendProblem(reply, appError);
    },
    // Requests Node's parser refuses before fastify sees them (headers too large, a malformed request line).
    clientErrorHandler: (error, socket) => answerClientError(error, socket),
  });

  // An empty body with a JSON content type is an empty object, not an error: clients
  // commonly send it for POSTs that take no parameters.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    try {
      const refused = req.url.startsWith('/gateways/') ? GATEWAY_REFUSED_KEYS : req.url.startsWith(ADMIN_MCP_PATH) ? NO_REFUSED_KEYS : ADMIN_REFUSED_KEYS;
      done(null, parseJsonBody(body as Buffer, refused));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  /** Runs one operation for a REST request and sends its answer (its result, or its problem). */
  const answerOperation = async (op: AnyOperation, request: FastifyRequest, reply: FastifyReply, { input, refusal }: RestInput) => {
    const end = metrics.duration.startTimer({ operation: op.name, surface: 'rest' });
    try {
      const result = await executeOperation(op, { services, principal: request.principal!, origin: originOf(request, 'rest') }, input, refusal);
      const status = successStatusOf(op, result);
      metrics.requests.inc({ operation: op.name, surface: 'rest', status });
      return reply.code(status).send(result);
    } catch (err) {
      const appError = toAppError(err);
      metrics.requests.inc({ operation: op.name, surface: 'rest', status: appError.status });
      if (appError.status >= 500) request.log.error({ err, operation: op.name }, 'operation failed');
      return sendProblem(reply, appError);
    } finally {
      end();
    }
  };

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appError = problemFromFastifyError(err);
    // A body fastify refused (not JSON, too large, another content type) for an authenticated caller of an operation is
    // that operation's refusal: answered after its entitlement and capability checks, as MCP answers, and audited.
    const op = request.routeOptions.config.operation;
    if (op && request.principal && appError.status < 500)
      return answerOperation(op, request, reply, { input: { ...(request.params as Record<string, unknown>) }, refusal: appError });
    if (appError.status >= 500) request.log.error({ err }, 'unexpected error');
    return sendProblem(reply, appError);
  });
  app.setNotFoundHandler((request, reply) => {
    return sendProblem(reply, new AppError('not_found', `No route for ${request.method} ${namedPath(request.url)}`));
  });

  registerOriginCheck(app, services.config.allowedOrigins);

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
    errorResponseBuilder: (_req, ctx) => rateLimited(ctx.max, ctx.ttl),
  });
  // The MCP endpoint takes from the same budget, but answers a tool call over it as the
  // tool's failure (contract 3: isError with the problem); the route opts out of the hook.
  const takeAdminBudget = app.createRateLimit();

  const authenticateRequest = async (request: FastifyRequest) => {
    request.principal = await authenticate(services, bearerToken(request.headers.authorization));
  };

  // REST: one route per operation, generated.
  for (const op of operations) {
    app.route({
      method: op.method,
      url: ADMIN_PREFIX + op.path,
      onRequest: authenticateRequest,
      config: { operation: op },
      handler: (request, reply) => answerOperation(op, request, reply, assembleInput(op, request)),
    });
  }

  // MCP: the same operations as tools, on revision 2026-07-28 and the 2025 ones alike (the v2 SDK serves both).
  const mcp = createAdminMcpHandler(operations);
  app.addHook('onClose', () => mcp.close());
  app.route({
    method: ['POST', 'GET', 'DELETE'],
    url: ADMIN_MCP_PATH,
    onRequest: authenticateRequest,
    config: { mcpEndpoint: true, rateLimit: false },
    handler: async (request, reply) => {
      const end = metrics.duration.startTimer({ operation: 'mcp', surface: 'mcp' });
      try {
        const budget = await takeAdminBudget(request);
        const overBudget = budget.isAllowed || !budget.isExceeded ? undefined : rateLimited(budget.max, budget.ttl);
        // What is not a tool call (a list, a handshake, a batch) has no tool result to fail in: the HTTP 429, as on REST.
        if (overBudget && (request.body as { method?: unknown } | null)?.method !== 'tools/call') throw overBudget;
        // A revision no MCP surface speaks, as the gateways answer it (the SDK would ask for a 2026-07-28 envelope).
        const protocolVersion = request.headers['mcp-protocol-version'];
        const modern = isModernMessage(request.body, protocolVersion);
        const unsupported = modern ? null : unsupportedProtocolVersion(protocolVersion);
        if (unsupported) return reply.code(400).send(unsupported);
        const batchRefusal = Array.isArray(request.body) ? adminBatchRefusal(request.headers['mcp-protocol-version']) : null;
        if (batchRefusal) return reply.code(400).send(batchRefusal);
        const { message, argumentsRefusal } = refuseKeysOfMcpMessage(request.body);
        const operationContext: OperationContext = {
          services,
          principal: request.principal!,
          origin: originOf(request, 'mcp'),
          ...(overBudget ? { refusedBeforehand: overBudget } : {}),
          ...(argumentsRefusal ? { inputRefusal: argumentsRefusal } : {}),
        };
        // Each message meets the rules it would meet alone (one, or each of a batch): the refused ones are answered here.
        const screened = screenMessages(Array.isArray(message) ? message : [message], protocolVersion);
        await auditRefusedToolCalls(operations, screened.refused, operationContext);
        if (!Array.isArray(message) && screened.refused.length > 0) return reply.send(screened.refused[0]!.answer);
        // A 2025 host that accepts JSON or a stream but not both is served, as the gateways serve it (mcp/accept.ts): the
        // SDK is told both (it would answer 406), and a host that takes no stream gets the answer as JSON.
        const accept = request.headers.accept;
        const lenient = !modern && (acceptsJson(accept) || acceptsEventStream(accept));
        const serve = async (body: unknown) => {
          const response = await mcp.fetch(toWebRequest(request, lenient ? { accept: 'application/json, text/event-stream' } : {}), {
            parsedBody: body,
            authInfo: { token: 'verified', clientId: request.principal!.userGuid, scopes: [], extra: { operationContext } },
          });
          return lenient && !acceptsEventStream(accept) ? asJsonResponse(response, Array.isArray(body)) : response;
        };
        // A batch's refused messages are answered in the batch's answer, beside the SDK's answers to the rest.
        if (Array.isArray(message) && screened.refused.length > 0) {
          const response = screened.rest.length > 0 ? await serve(screened.rest) : null;
          if (response && !response.ok) return sendWebResponse(reply, response);
          const answers = screened.refused.map((r) => r.answer);
          return reply.code(200).send([...answers, ...(response ? await messagesOfResponse(response) : [])]);
        }
        return sendWebResponse(reply, await serve(message));
      } finally {
        end();
      }
    },
  });

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
  registerOAuthClientMetadataRoute(app, services.config);
  await registerConsoleRoute(app);
  registerGatewayRoutes(app, services);
  app.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  return app;
}

/** The rate limit's refusal: at most `max` requests a minute per token, the next in `ttlMs`. */
function rateLimited(max: number, ttlMs: number): AppError {
  const retryAfterSeconds = Math.max(1, Math.ceil(ttlMs / 1000));
  return new AppError('rate_limited', `Too many requests: at most ${max} a minute. Retry after ${retryAfterSeconds} s.`, { retryAfterSeconds });
}
