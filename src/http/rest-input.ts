import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { validationFailed, type AppError, type FieldError } from '../core/errors.js';
import { pathParams, queryParams, type AnyOperation } from '../core/operation.js';
import { ADMIN_REFUSED_KEYS } from './json-body.js';

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

/** The content type the JSON body parser (app.ts) is registered for, as fastify matches it. */
const JSON_CONTENT_TYPE = /^\s*application\/json\s*(;|$)/i;

/** A REST request as the operation's one input, and what is wrong with it that the input cannot show. */
export interface RestInput {
  input: Record<string, unknown>;
  /** A body that is not an object, or a body field named like a path or query parameter (executeOperation's `refusal`). */
  refusal: AppError | null;
}

/**
 * Flattens a REST request into the operation's one input object (path, query and
 * body parameters), unknown names included: the executor validates the whole object
 * with the operation's schema, exactly as for MCP, so an unknown name is reported with
 * every other fault in MCP's words, and recorded in the audit log's request as MCP's
 * is. What only REST can get wrong (a body that is not an object, a parameter given
 * in another place than its own: a body field in the query, a query parameter in the
 * body, a path parameter in either) is handed to it as the refusal, so it is answered
 * where MCP's validation would answer, and audited.
 */
export function assembleInput(op: AnyOperation, request: FastifyRequest): RestInput {
  const shape = op.input.shape as Record<string, z.ZodType>;
  const input: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  const params = (request.params ?? {}) as Record<string, string>;
  for (const name of pathParams(op)) input[name] = params[name];

  const allowedQuery = new Set(queryParams(op));
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(query)) {
    // Refused as in a body (json-body.ts): the query parser keeps `__proto__` as a key, and `input[k] = v` would set
    // the input's prototype instead (dropping the argument, or making the input an array whose indexes are reported).
    if (ADMIN_REFUSED_KEYS.has(k)) errors.push({ path: k, message: 'is not allowed as a key' });
    else if (allowedQuery.has(k)) input[k] = coerceQueryValue(shape[k], v);
    else if (Object.hasOwn(input, k)) errors.push({ path: k, message: 'is a path parameter: it cannot be given in the query' });
    // Each parameter has one place (admin-api): a body field is not taken from the query.
    else if (Object.hasOwn(shape, k)) errors.push({ path: k, message: 'is a body field: send it in the JSON body, not in the query' });
    // A name no parameter takes: the schema names it as unknown.
    else input[k] = v;
  }

  const body = request.body;
  // No body (or an empty one) is no parameters; a JSON null is a body that is not an object, refused like any other.
  if (body !== undefined) {
    // fastify's own text/plain parser hands over the text: the body was sent as another type, whatever it holds.
    if (!JSON_CONTENT_TYPE.test(request.headers['content-type'] ?? '')) errors.push({ path: 'body', message: 'must be sent as content-type application/json' });
    else if (body === null || typeof body !== 'object' || Array.isArray(body)) errors.push({ path: 'body', message: 'must be a JSON object' });
    else {
      for (const [k, v] of Object.entries(body)) {
        if (Object.hasOwn(input, k)) errors.push({ path: k, message: 'unknown field' });
        else if (allowedQuery.has(k)) errors.push({ path: k, message: 'is a query parameter: give it in the query string, not in the body' });
        else input[k] = v;
      }
    }
  }
  return { input, refusal: errors.length > 0 ? validationFailed(errors) : null };
}
