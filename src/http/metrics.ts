import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus registry and the HTTP metrics every route feeds. Given the
 * runtime's registry, /metrics also serves what background workers (the forwarder)
 * record there; metrics already on it (a second app on one runtime) are reused.
 */
export function createMetrics(registry = new Registry()) {
  if (!registry.getSingleMetric('process_cpu_seconds_total')) collectDefaultMetrics({ register: registry });
  const reuse = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  const requests =
    reuse<Counter<'operation' | 'surface' | 'status'>>('svc_admin_requests_total') ??
    new Counter({
      name: 'svc_admin_requests_total',
      help: 'Admin interface requests by operation, surface and outcome',
      labelNames: ['operation', 'surface', 'status'] as const,
      registers: [registry],
    });
  const duration =
    reuse<Histogram<'operation' | 'surface'>>('svc_admin_request_duration_seconds') ??
    new Histogram({
      name: 'svc_admin_request_duration_seconds',
      help: 'Admin interface request duration by operation and surface',
      labelNames: ['operation', 'surface'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
  return { registry, requests, duration };
}

export type Metrics = ReturnType<typeof createMetrics>;
