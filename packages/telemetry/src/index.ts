export { startTelemetryFromEnv } from './start-from-env';
export { MAX_QUEUED_SPANS, onSpansDropped, startTelemetry, stopTelemetry, telemetryMode } from './start-telemetry';
export type { TelemetryMode, TelemetrySettings } from './start-telemetry';
export { activeTraceId, activeTraceParent, contextOf, inSpan, nameServerSpan, SpanKind, startSpan, SpanStatusCode, taskContext, traceIdOf, withContext } from './trace-context';
export type { Span, SpanOptions, StartedSpan } from './trace-context';
export { queueTelemetry } from './queue-telemetry';
