import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one API instance (its own registry, so tests can run several). */
export interface ApiMetrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
  tasksCreated: Counter<'kind' | 'key_type'>;
  rateLimited: Counter<'key_type' | 'window'>;
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): ApiMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({
      name: 'taskapi_http_requests_total',
      help: 'HTTP requests by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'taskapi_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    tasksCreated: new Counter({
      name: 'taskapi_tasks_created_total',
      help: 'Tasks created by kind and key type',
      labelNames: ['kind', 'key_type'],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'taskapi_rate_limited_total',
      help: 'Requests refused by the rate limiter',
      labelNames: ['key_type', 'window'],
      registers: [registry],
    }),
  };
}
