export { startTelemetryFromEnv } from './start-from-env';
export { MAX_QUEUED_SPANS, onSpansDropped, startTelemetry, stopTelemetry, telemetryMode } from './start-telemetry';
export type { TelemetryMode, TelemetrySettings } from './start-telemetry';
export { activeContext, activeTraceId, activeTraceParent, contextOf, creationTraceParent, handCarriedHeaders, inSendSpans, inSpan, nameServerSpan, outgoingTraceParent, recordedTraceId, SpanKind, startSendSpans, startSpan, SpanStatusCode, withContext } from './spans';
export type { SendSpans, SentJob, Span, SpanOptions, StartedSpan } from './spans';
export { childTraceParent, continuedTraceParent, newSpanId, newTraceId, parseTraceParent, traceIdOf } from './trace-context';
export type { TraceParent } from './trace-context';
export { redactedQuery, withServerSpans } from './server-spans';
