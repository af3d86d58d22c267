import { z } from 'zod';
import { clientInsert, type ClickhouseStore } from '../../stores/clickhouse.js';
import type { AlertMessageType, AlertSink, NewAlert } from '../alerts.js';
import { newGuid } from '../ids.js';
import type { Logger } from '../logger.js';
import { chDateTime } from './call-log-row.js';
import { NARROW_WINDOW, queryScoped, timeBounds } from './clickhouse-query.js';
import { redactDeep } from '../redaction.js';

export const ALERT_MESSAGE_TYPES = ['info', 'warning', 'error'] as const satisfies readonly AlertMessageType[];

export interface AlertRow {
  guid: string;
  code: string;
  messageType: AlertMessageType;
  subject: string;
  message: string;
  createdAt: string;
  relatedResourceIds: string[];
}

export interface AlertRecord extends AlertRow {
  dynamicContent: Record<string, unknown> | null;
  debugContext: Record<string, unknown> | null;
  relatedContext: Record<string, unknown> | null;
  closeDetails: Record<string, unknown> | null;
}

export interface AlertQuery {
  code?: string | undefined;
  messageType?: AlertMessageType | undefined;
  relatedResourceGuid?: string | undefined;
  fromMs?: number | undefined;
  toMs?: number | undefined;
  skip: number;
  take: number;
}

const json = (value: unknown): string => (value == null ? '' : JSON.stringify(value));
const parseJson = z.string().transform((s): Record<string, unknown> | null => {
  if (!s) return null;
  try {
    const v = JSON.parse(s) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return null;
  }
});

const RowSchema = z.object({
  guid: z.string(),
  code: z.string(),
  message_type: z.enum(ALERT_MESSAGE_TYPES),
  subject: z.string(),
  message: z.string(),
  created_ms: z.coerce.number(),
  related_resource_ids: z.array(z.string()),
});
const RecordSchema = RowSchema.extend({ dynamic_content: parseJson, debug_context: parseJson, related_context: parseJson, close_details: parseJson });

const ROW_COLUMNS = 'guid, code, message_type, subject, message, toUnixTimestamp64Milli(created_at) AS created_ms, related_resource_ids';

const toRow = (r: z.output<typeof RowSchema>): AlertRow => ({
  guid: r.guid,
  code: r.code,
  messageType: r.message_type,
  subject: r.subject,
  message: r.message,
  createdAt: new Date(r.created_ms).toISOString(),
  relatedResourceIds: r.related_resource_ids,
});

/**
 * Alerts live in ClickHouse beside the call logs. `raise` never throws: an alert
 * that cannot be stored is logged (code and subject only) and the raiser goes on.
 * Debug context is redacted here again, whatever the raiser did.
 */
export class ClickhouseAlertStore implements AlertSink {
  constructor(
    private readonly clickhouse: Pick<ClickhouseStore, 'client'>,
    private readonly logger: Logger,
  ) {}

  async raise(alert: NewAlert): Promise<void> {
    const guid = newGuid();
    try {
      const row = {
        organization_guid: alert.organizationGuid.toLowerCase(),
        guid,
        created_at: chDateTime(Date.now()),
        code: alert.code,
        message_type: alert.messageType,
        subject: alert.subject,
        message: alert.message,
        related_resource_ids: (alert.relatedResourceIds ?? []).map((id) => id.toLowerCase()),
        dynamic_content: json(alert.dynamicContent),
        debug_context: json(alert.debugContext === undefined ? undefined : redactDeep(alert.debugContext)),
        related_context: json(alert.relatedContext),
        close_details: '',
      };
      await clientInsert(this.clickhouse.client)({
        table: 'alerts',
        columns: Object.keys(row),
        format: 'JSONCompactEachRow',
        body: { chunks: [Buffer.from(`${JSON.stringify(Object.values(row))}\n`)] },
        settings: { log_comment: 'alerts.raise' },
      });
    } catch (err) {
      this.logger.error({ err: (err as Error).message, alert: { code: alert.code, subject: alert.subject } }, 'could not store an alert');
    }
  }

  /** One page of a workspace's alerts, newest first. */
  async list(organizationGuid: string, q: AlertQuery): Promise<{ items: AlertRow[]; skip: number; take: number; nextSkip: number | null }> {
    const { prewhere, params } = timeBounds(q);
    const where: string[] = [];
    Object.assign(params, { limit: q.take + 1, skip: q.skip });
    if (q.code !== undefined) {
      where.push('code = {code:String}');
      params.code = q.code;
    }
    if (q.messageType !== undefined) {
      where.push('message_type = {messageType:String}');
      params.messageType = q.messageType;
    }
    if (q.relatedResourceGuid !== undefined) {
      where.push('has(related_resource_ids, {related:String})');
      params.related = q.relatedResourceGuid.toLowerCase();
    }
    const rows = await queryScoped(this.clickhouse, organizationGuid, {
      tag: 'list_alerts',
      sql: `SELECT ${ROW_COLUMNS} FROM alerts PREWHERE ${prewhere.join(' AND ')} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY organization_guid DESC, created_at DESC, guid DESC LIMIT {limit:UInt32} OFFSET {skip:UInt64}`,
      params,
      row: RowSchema,
      overLimit: NARROW_WINDOW,
    });
    return { items: rows.slice(0, q.take).map(toRow), skip: q.skip, take: q.take, nextSkip: rows.length > q.take ? q.skip + q.take : null };
  }

  /** The full record, or null when the workspace has no alert of that guid. */
  async get(organizationGuid: string, alertGuid: string): Promise<AlertRecord | null> {
    const [r] = await queryScoped(this.clickhouse, organizationGuid, {
      tag: 'get_alert',
      sql: `SELECT ${ROW_COLUMNS}, dynamic_content, debug_context, related_context, close_details FROM alerts
        PREWHERE organization_guid = {org:String} WHERE guid = {guid:UUID} LIMIT 1`,
      params: { guid: alertGuid },
      row: RecordSchema,
    });
    if (!r) return null;
    return { ...toRow(r), dynamicContent: r.dynamic_content, debugContext: r.debug_context, relatedContext: r.related_context, closeDetails: r.close_details };
  }
}
