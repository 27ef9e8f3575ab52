// The OpenTelemetry SDK exporting spans (docs/architecture.md, "Tracing"): loaded by
// start-telemetry.ts only when OTEL_EXPORTER_OTLP_ENDPOINT is set, so that a process without one
// never loads the SDK, its exporters and its instrumentations.
import { diag, DiagLogLevel, type Context, type DiagLogger } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { REDACTED_QUERY_PARAMS } from './server-spans';
import { MAX_QUEUED_SPANS, type TelemetrySettings } from './start-telemetry';
import { TracePolicySampler } from './trace-policy';

/** Counts (and warns once of) spans that were dropped. */
type Dropped = (n: number, why: string) => void;

/**
 * Bounds the spans that wait for export (`MAX_QUEUED_SPANS`, counted from the end of a span until
 * its export settled) and counts every span that is dropped: for a full queue, or an export that
 * failed. The batch processor below it never sees more than the bound, so it drops nothing itself.
 */
class BoundedExport implements SpanProcessor {
  private pending = 0;
  private readonly inner: BatchSpanProcessor;

  constructor(
    private readonly dropped: Dropped,
    exporter: SpanExporter,
  ) {
    const counting: SpanExporter = {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => {
        exporter.export(spans, (result) => {
          this.pending -= spans.length;
          if (result.code !== ExportResultCode.SUCCESS) this.dropped(spans.length, result.error?.message ?? 'export failed');
          done(result);
        });
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
    this.inner = new BatchSpanProcessor({
      exporter: counting,
      maxQueueSize: MAX_QUEUED_SPANS,
      maxExportBatchSize: 512,
      scheduledDelayMillis: 1_000,
      exportTimeoutMillis: 10_000,
    });
  }

  onStart(span: Span, parent: Context): void {
    this.inner.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    if (this.pending >= MAX_QUEUED_SPANS) {
      this.dropped(1, 'export queue full');
      return;
    }
    this.pending++;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * A request that already carries a `traceparent` (a webhook attempt, sent inside its own client
 * span) is left alone by the undici instrumentation: it would add a second `traceparent`, naming a
 * span of its own, beside it.
 */
function namesItsParent(request: { headers: string | Array<string | string[]> }): boolean {
  const { headers } = request;
  if (typeof headers === 'string') return /(^|\r\n)traceparent:/i.test(headers);
  for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'traceparent') return true;
  return false;
}

/** The SDK's own complaints (an exporter's errors are counted above) go to stderr as JSON, warnings and up. */
const diagToStderr: DiagLogger = {
  error: (message) => process.stderr.write(`${JSON.stringify({ level: 'error', message: `opentelemetry: ${message}` })}\n`),
  warn: (message) => process.stderr.write(`${JSON.stringify({ level: 'warn', message: `opentelemetry: ${message}` })}\n`),
  info: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
};

/**
 * The SDK with its instrumentations, spans exported over OTLP/HTTP to `<endpoint>/v1/traces`
 * (see `startTelemetry`); not started yet.
 */
export function createExportingSdk(service: string, settings: TelemetrySettings, dropped: Dropped): NodeSDK {
  diag.setLogger(diagToStderr, DiagLogLevel.WARN);
  // JSON by default: exporting as JSON cost the API less than protobuf in every interleaved bench
  // run (docs/performance.md, "Tracing (section 11)"), for bodies about 2.4 times larger.
  const Exporter = settings.protocol === 'http/protobuf' ? ProtobufTraceExporter : JsonTraceExporter;
  const enabled = new Set(settings.enabledInstrumentations ?? []);
  return new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': service, 'process.pid': process.pid }),
    autoDetectResources: false,
    sampler: new ParentBasedSampler({ root: new TracePolicySampler(new TraceIdRatioBasedSampler(settings.samplerRatio)) }),
    spanProcessors: [new BoundedExport(dropped, new Exporter({ url: `${settings.endpoint}/v1/traces`, headers: { ...settings.headers }, timeoutMillis: 10_000 }))],
    instrumentations: [
      // Client spans only: server spans are made by `withServerSpans`, which makes none for a
      // request the trace policy leaves out. No Express instrumentation: the route table names
      // the server span and sets http.route (nameServerSpan), and a span per middleware was a
      // large part of the cost of a read. The redaction list replaces the instrumentation's own.
      new HttpInstrumentation({ disableIncomingRequestInstrumentation: true, redactedQueryParams: REDACTED_QUERY_PARAMS }),
      new UndiciInstrumentation({ ignoreRequestHook: namesItsParent }),
      // A span per command: most of a task's spans and of their cost, so only when asked for.
      ...(enabled.has('pg') ? [new PgInstrumentation({ requireParentSpan: true })] : []),
      ...(enabled.has('ioredis') ? [new IORedisInstrumentation({ requireParentSpan: true })] : []),
    ],
    // Nothing but traces: metrics stay on /metrics (Prometheus), logs on stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
}
