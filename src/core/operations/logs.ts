import { z } from 'zod';
import { validationFailed } from '../errors.js';
import { defineOperation } from '../operation.js';
import { apiSchema, COLUMN, LOG_TYPES } from '../logs/call-log-schema.js';
import { FILTER_COLUMNS, LOG_COLUMNS, queryLogs } from '../logs/query-logs.js';
import { READ_ONLY } from './common.js';

export const QUERY_LOGS_TAKE_DEFAULT = 100;
export const QUERY_LOGS_TAKE_MAX = 1000;

/** Epoch milliseconds within the range a JavaScript Date (and DateTime64) can hold. */
export const EpochMs = (description: string) => z.number().int().min(0).max(8_640_000_000_000).describe(description);

/** skip/take of the paged lists: take below 1 is refused, above the cap it is lowered to the cap. */
export const Skip = z.number().int().min(0).max(1_000_000_000).default(0).describe('Rows to skip (offset); default 0');
export const Take = (def: number, max: number) =>
  z
    .number()
    .int()
    .min(1)
    .default(def)
    .transform((n) => Math.min(n, max))
    .describe(`Page size; default ${def}, values above ${max} are capped at ${max}`);

/**
 * fromMs must not be after toMs; the 400 names fromMs. Checked in the handler: a
 * refinement on the input object would stop the REST layer from picking its fields.
 */
export function assertTimeBounds(v: { fromMs?: number | undefined; toMs?: number | undefined }): void {
  if (v.fromMs !== undefined && v.toMs !== undefined && v.fromMs > v.toMs) throw validationFailed([{ path: 'fromMs', message: 'must not be after toMs' }]);
}

const FilterValue = z.string().max(200);
const LogFilters = z
  .strictObject(
    Object.fromEntries(FILTER_COLUMNS.map((c) => [c, COLUMN[c].kind === 'logType' ? z.enum(LOG_TYPES).optional() : FilterValue.optional()])) as Record<
      (typeof FILTER_COLUMNS)[number],
      z.ZodOptional<z.ZodString>
    >,
  )
  .describe(`Equality filters on ${FILTER_COLUMNS.join(', ')}; type is one of ${LOG_TYPES.join(', ')}`);

const Nullable = z.string().nullable();
/** A query_logs row: the returned columns (call-log-schema.ts; created_at as ISO text), then the detail includeDetail adds. */
export const LogRow = z.object({
  ...Object.fromEntries(LOG_COLUMNS.map((c) => [c, c === 'created_at' ? z.string() : apiSchema(COLUMN[c])])),
  request_body: Nullable.optional(),
  response_body: Nullable.optional(),
  request_headers: Nullable.optional().describe('The redacted request headers as JSON text, at most 4 KiB'),
  response_headers: Nullable.optional().describe('The redacted response headers as JSON text, at most 4 KiB'),
  detail_truncated: z.boolean().optional(),
});

export const logOperations = [
  defineOperation({
    name: 'query_logs',
    title: 'Query call logs',
    description:
      "Returns a page of the workspace's MCP call logs, newest first by default. Filter by equality on connection, user, gateway, server, host, container, team, type, trace_id or span_id, bound created_at with fromMs/toMs (inclusive, epoch ms), order by any returned column, page with skip/take (take default 100, max 1000). includeDetail adds bodies and redacted headers, each cut at 4 KiB.",
    method: 'POST',
    path: '/logs/query',
    capability: 'exportLogs',
    input: z.strictObject({
      filters: LogFilters.optional(),
      fromMs: EpochMs('Inclusive lower bound on created_at, epoch milliseconds').optional(),
      toMs: EpochMs('Inclusive upper bound on created_at, epoch milliseconds').optional(),
      orderByColumn: z.enum(LOG_COLUMNS).default('created_at').describe('A returned column; default created_at'),
      orderByDirection: z.enum(['asc', 'desc']).default('desc').describe('asc or desc; default desc'),
      skip: Skip,
      take: Take(QUERY_LOGS_TAKE_DEFAULT, QUERY_LOGS_TAKE_MAX),
      includeDetail: z.boolean().default(false).describe('Add request/response bodies and headers (truncated to 4 KiB each)'),
    }),
    output: z.object({ items: z.array(LogRow), skip: z.number(), take: z.number(), nextSkip: z.number().nullable() }),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      assertTimeBounds(input);
      await services.callLogs.catchUp();
      return queryLogs(services.clickhouse, principal.organizationGuid, {
        filters: Object.fromEntries(Object.entries(input.filters ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>,
        fromMs: input.fromMs,
        toMs: input.toMs,
        orderByColumn: input.orderByColumn,
        orderByDirection: input.orderByDirection,
        skip: input.skip,
        take: input.take,
        includeDetail: input.includeDetail,
      });
    },
  }),
];
