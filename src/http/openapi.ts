import { z } from 'zod';
import { inputJsonSchema, outputJsonSchema, ProblemSchema } from '../core/json-schema.js';
import { bodyParams, pathParams, queryParams, type AnyOperation } from '../core/operation.js';

export const ADMIN_PREFIX = '/api/v1/svc-admin';
/** The admin MCP endpoint. */
export const ADMIN_MCP_PATH = `${ADMIN_PREFIX}/mcp`;

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'validation_failed: a parameter is missing, of the wrong type, out of range or unknown',
  '401': 'unauthenticated',
  '403': 'entitlement_required, missing_capability or not_creator',
  '404': 'not_found',
  '409': 'conflict',
  '422': 'identity_selection_required',
  '429': 'rate_limited',
  '503': 'unavailable: a store the service needs cannot be reached; retry after the Retry-After seconds',
};

function successStatusOf(op: AnyOperation): string {
  return typeof op.successStatus === 'number' ? String(op.successStatus) : op.successStatus ? '201' : '200';
}

/** The OpenAPI 3.1 document of the admin interface, generated from the operation registry. */
export function buildOpenApiDocument(operations: readonly AnyOperation[], publicBaseUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const shape = op.input.shape as Record<string, z.ZodType>;
    const param = (name: string, where: 'path' | 'query') => ({
      name,
      in: where,
      required: where === 'path' || !shape[name]!.safeParse(undefined).success,
      schema: inputJsonSchema(shape[name]!),
    });
    const body = bodyParams(op);
    const openApiPath = ADMIN_PREFIX + op.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const responses: Record<string, unknown> = {
      [successStatusOf(op)]: { description: 'Success', content: { 'application/json': { schema: outputJsonSchema(op.output) } } },
    };
    if (typeof op.successStatus === 'function') {
      responses['200'] = { description: 'Success (nothing new created)', content: { 'application/json': { schema: outputJsonSchema(op.output) } } };
    }
    for (const [status, description] of Object.entries(ERROR_RESPONSES)) {
      responses[status] = { description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
    }
    (paths[openApiPath] ??= {})[op.method.toLowerCase()] = {
      operationId: op.name,
      summary: op.title,
      description: op.description + (op.capability ? `\n\nRequires the capability \`${op.capability}\`.` : '\n\nAny authenticated caller.'),
      tags: [op.path.split('/')[1]],
      parameters: [...pathParams(op).map((n) => param(n, 'path')), ...queryParams(op).map((n) => param(n, 'query'))],
      ...(body.length > 0
        ? {
            requestBody: {
              required: body.some((k) => !shape[k]!.safeParse(undefined).success),
              content: { 'application/json': { schema: inputJsonSchema(op.input.pick(Object.fromEntries(body.map((k) => [k, true])) as never).strict()) } },
            },
          }
        : {}),
      responses,
      'x-mcp-tool': op.name,
      'x-capability': op.capability,
      'x-annotations': op.annotations,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'MCP gateway manager: workspace administration API',
      version: '1.0.0',
      description:
        'Every operation is also an MCP tool of the same name at POST ' +
        `${ADMIN_PREFIX}/mcp (Streamable HTTP), with the same bearer token, input and result.`,
    },
    servers: [{ url: publicBaseUrl }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An access token (svcp_...)' } },
      schemas: { Problem: outputJsonSchema(ProblemSchema) },
    },
    paths,
  };
}
