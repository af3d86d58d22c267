import { z } from 'zod';
import { ERROR_CODES } from './errors.js';

/** JSON Schema of a zod schema as a caller sends it (`io: 'input'`), without the `$schema` marker. */
export function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/** JSON Schema of a zod schema as the service returns it. */
export function outputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/** The problem object of contract section 2, as a schema for documents and tool listings. */
export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(ERROR_CODES),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    capability: z.string().optional(),
    entitlement: z.string().optional(),
    servers: z.array(z.string()).optional(),
  })
  .loose();
