import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { validationFailed } from '../core/errors.js';
import { bodyParams, pathParams, queryParams, type AnyOperation } from '../core/operation.js';

/** The innermost type name of a schema, looking through optional/nullable/default wrappers. */
function baseTypeOf(schema: z.ZodType): string {
  let def = schema.def as { type: string; innerType?: z.ZodType };
  while (def.innerType) def = def.innerType.def as typeof def;
  return def.type;
}

/** Query strings carry text; turn it into the boolean or number the schema asks for. */
function coerceQueryValue(schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema || typeof value !== 'string') return value;
  const type = baseTypeOf(schema);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (type === 'number' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return value;
}

/**
 * Flattens a REST request into the operation's one input object (path, query and
 * body parameters), refusing body fields that belong nowhere. The executor then
 * validates the whole object with the operation's schema, exactly as for MCP.
 */
export function assembleInput(op: AnyOperation, request: FastifyRequest): Record<string, unknown> {
  const shape = op.input.shape as Record<string, z.ZodType>;
  const input: Record<string, unknown> = {};
  const params = (request.params ?? {}) as Record<string, string>;
  for (const name of pathParams(op)) input[name] = params[name];

  const allowedQuery = new Set(queryParams(op));
  const query = (request.query ?? {}) as Record<string, unknown>;
  const unknownQuery = Object.keys(query).filter((k) => !allowedQuery.has(k));
  if (unknownQuery.length > 0) throw validationFailed(unknownQuery.map((k) => ({ path: k, message: 'unknown query parameter' })));
  for (const [k, v] of Object.entries(query)) input[k] = coerceQueryValue(shape[k], v);

  const body = request.body;
  // No body (or an empty one) is no parameters; a JSON null is a body that is not an object, refused like any other.
  if (body === undefined) return input;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw validationFailed([{ path: 'body', message: 'must be a JSON object' }]);
  const allowedBody = new Set(bodyParams(op));
  const unknownBody = Object.keys(body).filter((k) => !allowedBody.has(k));
  if (unknownBody.length > 0) throw validationFailed(unknownBody.map((k) => ({ path: k, message: 'unknown field' })));
  return { ...input, ...(body as Record<string, unknown>) };
}
