import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How an attempt ended: delivered, failed with a retry scheduled, or failed and given up. */
export const ATTEMPT_OUTCOMES = ['succeeded', 'retry', 'failed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** Prometheus metrics of one dispatcher process. */
export interface DispatcherMetrics {
  registry: Registry;
  observeAttempt(outcome: AttemptOutcome, seconds: number): void;
}

export function createDispatcherMetrics(opts: { defaultMetrics?: boolean } = {}): DispatcherMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const attempts = new Counter({
    name: 'taskapi_webhook_attempts_total',
    help: 'Webhook attempts by outcome (succeeded, retry = failed with a retry scheduled, failed = given up)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Every outcome from 0, so the first delivery given up after a start shows in `increase()`.
  for (const outcome of ATTEMPT_OUTCOMES) attempts.inc({ outcome }, 0);
  const duration = new Histogram({
    name: 'taskapi_webhook_attempt_seconds',
    help: 'Duration of webhook attempts (request and response) by outcome',
    labelNames: ['outcome'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return {
    registry,
    observeAttempt(outcome, seconds) {
      attempts.inc({ outcome });
      duration.observe({ outcome }, seconds);
    },
  };
}
