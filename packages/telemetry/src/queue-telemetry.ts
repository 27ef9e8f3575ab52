import type { Context } from '@opentelemetry/api';
import { SpanKind, type Span as QueueSpan, type Telemetry, type Tracer as QueueTracer } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { telemetryMode } from './start-telemetry';

/**
 * BullMQ's internal operations whose spans are kept: a job's failure and its retry or delay,
 * which carry the error and hand the job's context on to its next run. BullMQ's producer and
 * consumer spans are always kept.
 */
const KEPT_INTERNAL_OPERATIONS: ReadonlySet<string> = new Set(['fail', 'retry', 'delay']);

/** A span that records nothing and leaves the context as it is (the one of the code it wraps). */
const UNRECORDED: QueueSpan<Context> = {
  setSpanOnContext: (ctx) => ctx,
  setAttribute: () => undefined,
  setAttributes: () => undefined,
  addEvent: () => undefined,
  recordException: () => undefined,
  end: () => undefined,
};

/**
 * Whether BullMQ's span `name` (`<operation> <queue>`) of `kind` is a step of a task's life
 * (docs/architecture.md, "Tracing"): a job added (producer), run (consumer), failed, retried or
 * delayed. Not: a job's `complete` (a Redis call at the very end of its consumer span, which
 * covers it), nor the housekeeping a worker does on its own (`extendLocks`, the stalled-job
 * checks, `close`, `pause`, …), each of which would otherwise be a trace of its own.
 */
export function isTaskStep(name: string, kind: SpanKind | undefined): boolean {
  if (kind === SpanKind.PRODUCER || kind === SpanKind.CONSUMER) return true;
  const space = name.indexOf(' ');
  return KEPT_INTERNAL_OPERATIONS.has(space === -1 ? name : name.slice(0, space));
}

let shared: Telemetry<Context> | undefined;

/**
 * BullMQ's `telemetry` option for queues and workers (producer and consumer spans, the job's
 * context carried in its options), the spans `isTaskStep` leaves out not made at all; or
 * undefined when the SDK is not running in this process (no spans to make).
 */
export function queueTelemetry(): Telemetry<Context> | undefined {
  if (telemetryMode() !== 'export') return undefined;
  if (shared) return shared;
  const otel = new BullMQOtel({ tracerName: 'taskapi' });
  const tracer: QueueTracer<Context> = {
    startSpan: (name, options, ctx) => (isTaskStep(name, options?.kind) ? otel.tracer.startSpan(name, options, ctx) : UNRECORDED),
  };
  shared = { tracer, contextManager: otel.contextManager };
  return shared;
}
