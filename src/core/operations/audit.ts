import { z } from 'zod';
import { AUDIT_SURFACES } from '../audit/audit-record.js';
import { AUDIT_FILTER_KEYS, queryAuditLog } from '../audit/query-audit-log.js';
import { defineOperation } from '../operation.js';
import { READ_ONLY } from './common.js';
import { EpochMs, Skip, Take, assertTimeBounds } from './logs.js';

export const AUDIT_TAKE_DEFAULT = 100;
export const AUDIT_TAKE_MAX = 1000;

const FilterValue = z.string().max(200);
const AuditFilters = z
  .strictObject({
    operation: FilterValue.optional().describe('An operation name, e.g. disable_connection'),
    actor_user_guid: FilterValue.optional().describe('The acting user'),
    target_guid: FilterValue.optional().describe('A guid the operation named or created'),
    outcome: FilterValue.optional().describe('"ok" or a problem code, e.g. missing_capability'),
    surface: z.enum(AUDIT_SURFACES).optional().describe('rest, mcp or cli'),
  })
  .describe(`Equality filters on ${AUDIT_FILTER_KEYS.join(', ')}`);

const Nullable = z.string().nullable();
export const AuditRecord = z.object({
  guid: z.string(),
  created_at: z.string(),
  organization: z.string(),
  actor_user_guid: Nullable,
  actor_token_prefix: Nullable,
  surface: z.enum(AUDIT_SURFACES),
  operation: z.string(),
  target_guids: z.array(z.string()),
  outcome: z.string(),
  status: z.number(),
  request: z.unknown().describe('The input of the operation, every secret replaced by "[REDACTED]"'),
  source_ip: Nullable,
  user_agent: Nullable,
});

export const auditOperations = [
  defineOperation({
    name: 'query_audit_log',
    title: 'Query the audit log',
    description:
      "Returns a page of the workspace's admin audit log, newest first: one record per operation that changes something (REST, MCP or the operator CLI), successful or refused after authentication, with the actor, surface, operation, targets, outcome, HTTP status, the redacted input, source address and user agent. Filter by operation, actor_user_guid, target_guid, outcome or surface, bound created_at with fromMs/toMs (inclusive, epoch ms), page with skip/take (take default 100, max 1000).",
    method: 'POST',
    path: '/audit/query',
    capability: 'viewAuditLog',
    input: z.strictObject({
      filters: AuditFilters.optional(),
      fromMs: EpochMs('Inclusive lower bound on created_at, epoch milliseconds').optional(),
      toMs: EpochMs('Inclusive upper bound on created_at, epoch milliseconds').optional(),
      skip: Skip,
      take: Take(AUDIT_TAKE_DEFAULT, AUDIT_TAKE_MAX),
    }),
    output: z.object({ items: z.array(AuditRecord), skip: z.number(), take: z.number(), nextSkip: z.number().nullable() }),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      assertTimeBounds(input);
      await services.audit.catchUp();
      return queryAuditLog(services.clickhouse, principal.organizationGuid, {
        filters: Object.fromEntries(Object.entries(input.filters ?? {}).filter(([, v]) => v !== undefined)),
        fromMs: input.fromMs,
        toMs: input.toMs,
        skip: input.skip,
        take: input.take,
      });
    },
  }),
];
