import { z } from 'zod';
import { defineOperation } from '../operation.js';
import { LOG_TYPES } from '../logs/call-log-row.js';
import { USAGE_FILTER_KEYS, USAGE_GROUP_KEYS, USAGE_INTERVALS, usageReport, usageWindow, type UsageFilterKey } from '../logs/usage-report.js';
import { READ_ONLY } from './common.js';
import { EpochMs, Skip, assertTimeBounds } from './logs.js';

export const USAGE_TAKE_DEFAULT = 100;
export const USAGE_TAKE_MAX = 10_000;

const filterSchema = (key: UsageFilterKey) => {
  if (key === 'type') return z.enum(LOG_TYPES).optional();
  if (key === 'status') return z.enum(['ok', 'error']).optional();
  return z.string().max(500).optional();
};

const UsageFilters = z
  .strictObject(Object.fromEntries(USAGE_FILTER_KEYS.map((k) => [k, filterSchema(k)])) as Record<UsageFilterKey, z.ZodOptional<z.ZodString>>)
  .describe(`Equality filters on ${USAGE_FILTER_KEYS.join(', ')}`);

const Measures = {
  calls: z.number(),
  errors: z.number(),
  p50Ms: z.number(),
  p95Ms: z.number(),
  p99Ms: z.number(),
  requestBytes: z.number(),
  responseBytes: z.number(),
};

const UsageItem = z.object({
  bucket: z.string().optional().describe('ISO start of the UTC bucket; only with interval'),
  ...Object.fromEntries(USAGE_GROUP_KEYS.map((k) => [k, z.string().nullable().optional()])),
  ...Measures,
});

export const reportOperations = [
  defineOperation({
    name: 'get_usage_report',
    title: 'Usage report',
    description:
      "Aggregates the workspace's MCP calls: calls, errors, p50/p95/p99 duration and request/response bytes over a window (fromMs/toMs inclusive, epoch ms; default the last 24 hours), optionally per minute/hour/day bucket (UTC) and grouped by up to three of " +
      `${USAGE_GROUP_KEYS.join(', ')}. Filters by equality on the query_logs filter keys plus tool_name and status. Items are ordered by bucket, then calls descending, then the group values; totals cover everything selected. Counts and bytes are exact, percentiles within 5 % or 1 ms.`,
    method: 'POST',
    path: '/reports/usage',
    capability: 'viewUsageReports',
    input: z.strictObject({
      fromMs: EpochMs('Inclusive lower bound on created_at, epoch milliseconds; default toMs minus 24 hours').optional(),
      toMs: EpochMs('Inclusive upper bound on created_at, epoch milliseconds; default now').optional(),
      filters: UsageFilters.optional(),
      groupBy: z
        .array(z.enum(USAGE_GROUP_KEYS))
        .max(3, 'at most three keys')
        .refine((keys) => new Set(keys).size === keys.length, 'each key at most once')
        .default([])
        .describe(`0 to 3 of ${USAGE_GROUP_KEYS.join(', ')}`),
      interval: z.enum(USAGE_INTERVALS).optional().describe('Bucket the report per minute, hour or day (UTC)'),
      skip: Skip,
      take: z
        .number()
        .int()
        .min(1)
        .max(USAGE_TAKE_MAX)
        .default(USAGE_TAKE_DEFAULT)
        .describe(`Page size; default ${USAGE_TAKE_DEFAULT}, at most ${USAGE_TAKE_MAX}`),
    }),
    output: z.object({
      items: z.array(UsageItem),
      totals: z.object(Measures),
      skip: z.number(),
      take: z.number(),
      nextSkip: z.number().nullable(),
    }),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      assertTimeBounds(input);
      const window = usageWindow(input.fromMs, input.toMs);
      await services.callLogs.catchUp();
      return usageReport(services.clickhouse, principal.organizationGuid, {
        ...window,
        filters: Object.fromEntries(Object.entries(input.filters ?? {}).filter(([, v]) => v !== undefined)),
        groupBy: input.groupBy,
        interval: input.interval,
        skip: input.skip,
        take: input.take,
      });
    },
  }),
];
