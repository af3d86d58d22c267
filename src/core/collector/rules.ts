import type { LogsFormat } from '../../stores/schema.js';

/** The logs format a collector reports: stored value, or otlp for one saved before the field existed. */
export const resolveLogsFormat = (stored: LogsFormat | null | undefined): LogsFormat => stored ?? 'otlp';
