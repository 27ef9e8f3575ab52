import { BullMQOtel } from 'bullmq-otel';
import { telemetryMode } from './start-telemetry';

let shared: BullMQOtel | undefined;

/**
 * BullMQ's `telemetry` option for queues and workers (producer and consumer spans, the job's
 * context carried in its options), or undefined when tracing is off in this process.
 */
export function queueTelemetry(): BullMQOtel | undefined {
  if (telemetryMode() === 'disabled') return undefined;
  shared ??= new BullMQOtel({ tracerName: 'taskapi' });
  return shared;
}
