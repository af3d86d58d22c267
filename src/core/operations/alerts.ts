import { z } from 'zod';
import { notFound } from '../errors.js';
import { ALERT_MESSAGE_TYPES, ClickhouseAlertStore } from '../logs/alert-store.js';
import { defineOperation } from '../operation.js';
import { Id, READ_ONLY } from './common.js';
import { assertTimeBounds, EpochMs, Skip, Take } from './logs.js';

export const LIST_ALERTS_TAKE_DEFAULT = 50;
export const LIST_ALERTS_TAKE_MAX = 250;

const JsonObject = z.record(z.string(), z.unknown()).nullable();

export const AlertRow = z.object({
  guid: z.string(),
  code: z.string(),
  messageType: z.enum(ALERT_MESSAGE_TYPES),
  subject: z.string(),
  message: z.string(),
  createdAt: z.string(),
  relatedResourceIds: z.array(z.string()),
});

export const AlertRecord = AlertRow.extend({
  dynamicContent: JsonObject.describe('Subject and message with unresolved placeholders, and their values'),
  debugContext: JsonObject.describe('Response status, headers (redacted), body and engine details'),
  relatedContext: JsonObject,
  closeDetails: JsonObject.describe('How the alert was closed; null while open'),
});

export const alertOperations = [
  defineOperation({
    name: 'list_alerts',
    title: 'List alerts',
    description:
      "Returns a page of the workspace's alerts, newest first. Filter by code, messageType (info, warning, error) or relatedResourceGuid (any related server, gateway, assignment, identity, policy or connection), bound the creation time with fromMs/toMs (inclusive, epoch ms), page with skip/take (take default 50, max 250).",
    method: 'POST',
    path: '/alerts/query',
    capability: 'seeAllAlerts',
    input: z.strictObject({
      filters: z
        .strictObject({
          code: z.string().min(1).max(100).optional().describe('Exact alert code, e.g. server_validation_failed'),
          messageType: z.enum(ALERT_MESSAGE_TYPES).optional(),
          relatedResourceGuid: z.string().min(1).max(100).optional().describe('Matches alerts naming this resource among their related resources'),
        })
        .optional(),
      fromMs: EpochMs('Inclusive lower bound on the creation time, epoch milliseconds').optional(),
      toMs: EpochMs('Inclusive upper bound on the creation time, epoch milliseconds').optional(),
      skip: Skip,
      take: Take(LIST_ALERTS_TAKE_DEFAULT, LIST_ALERTS_TAKE_MAX),
    }),
    output: z.object({ items: z.array(AlertRow), skip: z.number(), take: z.number(), nextSkip: z.number().nullable() }),
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      assertTimeBounds(input);
      return new ClickhouseAlertStore(services.clickhouse, services.logger).list(principal.organizationGuid, {
        ...input.filters,
        fromMs: input.fromMs,
        toMs: input.toMs,
        skip: input.skip,
        take: input.take,
      });
    },
  }),
  defineOperation({
    name: 'get_alert',
    title: 'Get an alert',
    description: 'Returns one alert with its full record: dynamicContent, debugContext (secrets redacted), relatedContext and closeDetails.',
    method: 'GET',
    path: '/alerts/:alertGuid',
    capability: 'seeAllAlerts',
    input: z.strictObject({ alertGuid: Id('Alert guid') }),
    output: AlertRecord,
    annotations: READ_ONLY,
    handler: async ({ services, principal }, input) => {
      const alert = await new ClickhouseAlertStore(services.clickhouse, services.logger).get(principal.organizationGuid, input.alertGuid);
      if (!alert) throw notFound('Alert');
      return alert;
    },
  }),
];
