import { BullMQOtel } from 'bullmq-otel';
import { telemetryMode } from './start-telemetry';

let shared: BullMQOtel | undefined;

/**
 * BullMQ's `telemetry` option for queues and workers (producer and consumer spans, the job's
 * context carried in its options), or undefined when the SDK is not running in this process (no spans to make).
 */
export function queueTelemetry(): BullMQOtel | undefined {
  if (telemetryMode() !== 'export') return undefined;
  shared ??= new BullMQOtel({ tracerName: 'taskapi' });
  return shared;
}
