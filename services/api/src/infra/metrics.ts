import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { TASK_E2E_METRIC } from '@taskapi/domain';
import { registerReadinessMetrics, registerTelemetryMetrics } from '@taskapi/service';
import type { TaskKind } from '@taskapi/task-kinds';
import type { QueueSignal } from './queue-signals';

/** Prometheus metrics of one API instance (its own registry, so tests can run several). */
export interface ApiMetrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  /** Until the answer's end; for an event stream, until its headers (the stream's life is `eventStreamDuration`). */
  httpDuration: Histogram<'method' | 'route'>;
  /** How long event streams stayed open, by route. */
  eventStreamDuration: Histogram<'route'>;
  tasksCreated: Counter<'kind' | 'key_type'>;
  rateLimited: Counter<'key_type' | 'window'>;
  /** Created → cancelled here; the worker exposes the completed and failed series. */
  taskE2e: Histogram<'kind' | 'status'>;
}

/**
 * Counts one answered request and its duration. The labelled series are looked up once per
 * method, route and status and kept (prom-client hashes the label values on every call otherwise);
 * routes are templates and methods the few Node accepts, so the set stays small.
 */
export function requestRecorder(metrics: Pick<ApiMetrics, 'httpRequests' | 'httpDuration'>): (method: string, route: string, status: number, seconds: number) => void {
  const series = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();
  return (method, route, status, seconds) => {
    const key = `${method} ${route} ${status}`;
    let s = series.get(key);
    if (!s) {
      s = { count: metrics.httpRequests.labels(method, route, String(status)), duration: metrics.httpDuration.labels(method, route) };
      series.set(key, s);
    }
    s.count.inc();
    s.duration.observe(seconds);
  };
}

export interface MetricsOptions {
  defaultMetrics?: boolean;
  /** Queue-wide autoscaling signals, read from Redis at every scrape. */
  queueSignals?: () => Promise<Map<TaskKind, QueueSignal>>;
  /**
   * The checks of `GET /readyz` by name, run at every scrape for `taskapi_ready` and
   * `taskapi_backend_up` (see registerReadinessMetrics).
   */
  readinessChecks?: Record<string, () => Promise<unknown>>;
}

/**
 * `taskapi_queue_depth`, `taskapi_queue_oldest_waiting_seconds` and `taskapi_tasks_held_by_cap`:
 * one read per scrape feeds all three gauges. A kind whose queue could not be read has no sample in
 * that scrape (not a stale one).
 */
function registerQueueGauges(registry: Registry, read: () => Promise<Map<TaskKind, QueueSignal>>): void {
  let pending: Promise<Map<TaskKind, QueueSignal>> | undefined;
  // Both gauges collect in the same scrape: they share one read instead of asking Redis twice.
  const current = () => {
    pending ??= read().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const depth = new Gauge({
    name: 'taskapi_queue_depth',
    help: 'Tasks that could start now (released jobs and tasks their account cap lets run; not those held by a cap), by kind; queue-wide, the same on every API replica',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const signals = await current();
      depth.reset();
      for (const [kind, s] of signals) depth.set({ kind }, s.depth);
    },
  });
  const oldest = new Gauge({
    name: 'taskapi_queue_oldest_waiting_seconds',
    help: 'Age of the oldest task that could start now, by kind (0 when none waits); queue-wide',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const signals = await current();
      oldest.reset();
      for (const [kind, s] of signals) oldest.set({ kind }, s.oldestWaitingSeconds);
    },
  });
  const held = new Gauge({
    name: 'taskapi_tasks_held_by_cap',
    help: "Tasks waiting only because their account is at its cap of running tasks, by kind; queue-wide",
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const signals = await current();
      held.reset();
      for (const [kind, s] of signals) held.set({ kind }, s.heldByCap);
    },
  });
}

export function createMetrics(opts: MetricsOptions = {}): ApiMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  if (opts.queueSignals) registerQueueGauges(registry, opts.queueSignals);
  if (opts.readinessChecks) registerReadinessMetrics(registry, 'api', opts.readinessChecks);
  registerTelemetryMetrics(registry, 'api');
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
      help: 'HTTP request latency by route pattern (an event stream until its headers are sent)',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    eventStreamDuration: new Histogram({
      name: 'taskapi_event_stream_duration_seconds',
      help: 'How long task event streams stayed open (headers sent to close), by route pattern; not part of taskapi_http_request_duration_seconds',
      labelNames: ['route'],
      buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 3600],
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
    taskE2e: new Histogram({ ...TASK_E2E_METRIC, labelNames: [...TASK_E2E_METRIC.labelNames], registers: [registry] }),
  };
}
