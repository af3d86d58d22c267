import { z } from 'zod';
import { AppError, validationFailed, type FieldError } from '../errors.js';
import { deleteCollectorHeadersSecret, findCollectorConfiguration, saveCollectorConfiguration, syncForwarderCursors } from '../collector/config-repository.js';
import { resolveLogsFormat } from '../collector/rules.js';
import { checkedHeaderMap, headerMapInput } from '../header-map.js';
import { defineOperation } from '../operation.js';
import type { Services } from '../services.js';
import type { CollectorConfiguration } from '../../stores/schema.js';
import { CHANGES, READ_ONLY } from './common.js';

const LOGS_FORMATS = ['otlp', 'collector_hec'] as const;

export const OtelConfiguration = z.object({
  configured: z.boolean(),
  logsCollectorUrl: z.string().nullable(),
  logsFormat: z.enum(LOGS_FORMATS),
  tracesCollectorUrl: z.string().nullable(),
  headerNames: z.array(z.string()),
});

/** The reported shape: never a header value, only names; the format always resolved. */
function toOtelConfiguration(config: CollectorConfiguration | undefined): z.infer<typeof OtelConfiguration> {
  const logsCollectorUrl = config?.logs_url ?? null;
  const tracesCollectorUrl = config?.traces_url ?? null;
  return {
    configured: logsCollectorUrl !== null || tracesCollectorUrl !== null,
    logsCollectorUrl,
    logsFormat: resolveLogsFormat(config?.logs_format),
    tracesCollectorUrl,
    headerNames: config?.header_names ?? [],
  };
}

const CollectorUrl = (what: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(2048)
    .nullable()
    .optional()
    .describe(`${what}, stored exactly as given (no signal path is appended). Omitted keeps the stored URL; null stops forwarding that signal.`);

const SetOtelConfigurationInput = z.strictObject({
  logsCollectorUrl: CollectorUrl('Log export endpoint, in the format selected by logsFormat'),
  logsFormat: z
    .enum(LOGS_FORMATS)
    .optional()
    .describe(
      'otlp (OTLP/HTTP JSON, the default) or collector_hec (HTTP Event Collector events). Omitted keeps the stored format. Governs logs only; traces are always OTLP.',
    ),
  tracesCollectorUrl: CollectorUrl('OTLP/HTTP trace endpoint'),
  headers: headerMapInput(
    'Headers sent with both signals, e.g. {"Authorization": "Splunk <token>"}. A map replaces the whole set, {} clears it, omitted keeps it. Values are stored encrypted and never returned.',
  ).optional(),
});

/** Runs the egress check (contract section 1) on every URL given, reporting all refused fields at once. */
async function checkCollectorUrls(services: Pick<Services, 'egress'>, urls: Record<string, string | null | undefined>): Promise<void> {
  const errors: FieldError[] = [];
  for (const [field, url] of Object.entries(urls)) {
    if (typeof url !== 'string') continue;
    try {
      await services.egress.check(field, url);
    } catch (err) {
      if (err instanceof AppError && Array.isArray(err.extras.errors)) errors.push(...(err.extras.errors as FieldError[]));
      else throw err;
    }
  }
  if (errors.length > 0) throw validationFailed(errors);
}

export const collectorOperations = [
  defineOperation({
    name: 'get_otel_configuration',
    title: 'Get the collector configuration',
    description:
      "Shows where the workspace's call logs and traces are forwarded: the logs and traces collector URLs, the logs format (otlp or collector_hec) and the names of the headers sent. Header values are never returned. configured is false when no collector is set up.",
    method: 'GET',
    path: '/otel-configuration',
    capability: 'manageOtelCollector',
    input: z.strictObject({}),
    output: OtelConfiguration,
    annotations: READ_ONLY,
    handler: async ({ services, principal }) => toOtelConfiguration(await findCollectorConfiguration(services.db, principal.organizationGuid)),
  }),
  defineOperation({
    name: 'set_otel_configuration',
    title: 'Set the collector configuration',
    description:
      'Configures forwarding of every MCP call to an external collector: logs as OTLP/HTTP JSON or HEC events, traces as OTLP/HTTP JSON. Give at least one of logsCollectorUrl and tracesCollectorUrl; each URL is stored exactly as given and updates independently (an omitted URL keeps its value). logsFormat and headers, when omitted, keep their stored values; a headers map replaces the whole set and {} clears it. Rows ingested from now on are delivered at least once.',
    method: 'POST',
    path: '/otel-configuration',
    capability: 'manageOtelCollector',
    input: SetOtelConfigurationInput,
    output: OtelConfiguration,
    annotations: CHANGES,
    handler: async ({ services, principal }, input) => {
      if (input.logsCollectorUrl === undefined && input.tracesCollectorUrl === undefined) {
        const message = 'at least one of logsCollectorUrl and tracesCollectorUrl is required';
        throw validationFailed([
          { path: 'logsCollectorUrl', message },
          { path: 'tracesCollectorUrl', message },
        ]);
      }
      await checkCollectorUrls(services, { logsCollectorUrl: input.logsCollectorUrl, tracesCollectorUrl: input.tracesCollectorUrl });
      const headers = input.headers === undefined ? undefined : checkedHeaderMap(input.headers);
      const org = principal.organizationGuid;

      const saved = await services.db.transaction().execute(async (trx) => {
        const existing = await findCollectorConfiguration(trx, org, { forUpdate: true });
        const logsUrl = input.logsCollectorUrl !== undefined ? input.logsCollectorUrl : (existing?.logs_url ?? null);
        const tracesUrl = input.tracesCollectorUrl !== undefined ? input.tracesCollectorUrl : (existing?.traces_url ?? null);
        const logsFormat = input.logsFormat ?? (existing ? existing.logs_format : 'otlp');
        if (resolveLogsFormat(logsFormat) !== 'otlp' && !logsUrl) {
          throw validationFailed([
            { path: 'logsFormat', message: `${logsFormat} needs a logs collector URL: give logsCollectorUrl in the same call or store one first` },
          ]);
        }

        let headerNames = existing?.header_names ?? [];
        let secretGuid = existing?.headers_secret_guid ?? null;
        if (headers !== undefined) {
          headerNames = Object.keys(headers);
          if (headerNames.length === 0) {
            if (secretGuid) await deleteCollectorHeadersSecret(trx, org, secretGuid);
            secretGuid = null;
          } else if (secretGuid) {
            await services.secrets.replace(trx, org, secretGuid, headers);
          } else {
            secretGuid = await services.secrets.put(trx, org, headers);
          }
        }

        const row = await saveCollectorConfiguration(trx, org, {
          logs_url: logsUrl,
          logs_format: logsFormat,
          traces_url: tracesUrl,
          header_names: headerNames,
          headers_secret_guid: secretGuid,
        });
        await syncForwarderCursors(trx, org, { logs: logsUrl !== null, traces: tracesUrl !== null });
        return row;
      });
      return toOtelConfiguration(saved);
    },
  }),
];
