import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The forwarder's figures per workspace and signal on /metrics. Counts are records
 * (not requests). Labels carry only the workspace guid and the signal: never a URL,
 * header or anything a customer configured.
 */
export function createForwarderMetrics(registry: Registry) {
  const labelNames = ['organization', 'signal'] as const;
  const counter = (name: string, help: string) =>
    (registry.getSingleMetric(name) as Counter<(typeof labelNames)[number]> | undefined) ?? new Counter({ name, help, labelNames, registers: [registry] });
  const lagName = 'mcpgw_forwarder_lag_seconds';
  return {
    sent: counter('mcpgw_forwarder_records_sent_total', 'Records (call logs, spans, audit records) a collector accepted'),
    retried: counter(
      'mcpgw_forwarder_records_retried_total',
      'Records in batches the collector did not take (any non-2xx answer, network errors), held and sent again',
    ),
    rejected: counter('mcpgw_forwarder_records_rejected_total', 'Records a collector rejected inside an accepted batch (OTLP partial success)'),
    lag:
      (registry.getSingleMetric(lagName) as Gauge<(typeof labelNames)[number]> | undefined) ??
      new Gauge({ name: lagName, help: 'Age of the oldest record of the signal not yet delivered (0 when caught up)', labelNames, registers: [registry] }),
  };
}

export type ForwarderMetrics = ReturnType<typeof createForwarderMetrics>;
