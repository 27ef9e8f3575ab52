import { context, diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
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
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import type { Context } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/sdk-trace';
import { TracePolicySampler } from './trace-policy';

/** Query parameters whose values spans never carry: the instrumentation's defaults and our read token. */
export const REDACTED_QUERY_PARAMS = ['sig', 'Signature', 'AWSAccessKeyId', 'X-Goog-Signature', 'X-Amz-Signature', 'X-Amz-Credential', 'X-Amz-Security-Token', 'access_token'];

/** What `startTelemetry` reads: `config.telemetry` of @taskapi/config (the standard `OTEL_*` variables). */
export interface TelemetrySettings {
  sdkDisabled: boolean;
  endpoint?: string | undefined;
  /** OTLP/HTTP encoding of the exports; default `http/json`. */
  protocol?: 'http/json' | 'http/protobuf' | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
  serviceName?: string | undefined;
  samplerRatio: number;
  /** `OTEL_NODE_ENABLED_INSTRUMENTATIONS`'s opt-in instrumentations: `pg`, `ioredis` (none by default). */
  enabledInstrumentations?: ReadonlyArray<'pg' | 'ioredis'> | undefined;
}

/** How tracing runs in this process: no trace context, the task's carried by hand, or the SDK exporting spans. */
export type TelemetryMode = 'disabled' | 'propagate-only' | 'export';

/** Spans waiting for export at most; more are dropped (and counted) while a collector is slow or gone. */
export const MAX_QUEUED_SPANS = 2048;

interface TelemetryState {
  mode: TelemetryMode;
  service: string;
  sdk: NodeSDK | undefined;
  dropped: number;
  onDrop: Array<(n: number) => void>;
  warned: boolean;
}

const state: TelemetryState = { mode: 'disabled', service: '', sdk: undefined, dropped: 0, onDrop: [], warned: false };

function dropped(n: number, why: string): void {
  state.dropped += n;
  for (const listener of state.onDrop) listener(n);
  if (!state.warned) {
    state.warned = true;
    // Once per process: an unreachable collector must not flood the logs (the metric keeps counting).
    // Beside the service's own lines, in their shape (the logger is not known here).
    const line = { service: state.service, level: 'warn', message: 'trace spans dropped', reason: why, note: 'further drops are counted in taskapi_otel_spans_dropped_total, not logged', timestamp: new Date().toISOString() };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
}

/**
 * Bounds the spans that wait for export (`MAX_QUEUED_SPANS`, counted from the end of a span until
 * its export settled) and counts every span that is dropped: for a full queue, or an export that
 * failed. The batch processor below it never sees more than the bound, so it drops nothing itself.
 */
class BoundedExport implements SpanProcessor {
  private pending = 0;
  private readonly inner: BatchSpanProcessor;

  constructor(exporter: SpanExporter) {
    const counting: SpanExporter = {
      export: (spans: ReadableSpan[], done: (result: ExportResult) => void) => {
        exporter.export(spans, (result) => {
          this.pending -= spans.length;
          if (result.code !== ExportResultCode.SUCCESS) dropped(spans.length, result.error?.message ?? 'export failed');
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
      dropped(1, 'export queue full');
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
 * Starts OpenTelemetry for one service. Call it before anything that should be traced is loaded
 * (pg, ioredis, undici, http): the instrumentations patch those modules as they are required. See
 * docs/architecture.md, "Tracing":
 *
 * - `OTEL_SDK_DISABLED=true`: nothing is started; new tasks get no trace context.
 * - no `OTEL_EXPORTER_OTLP_ENDPOINT` (the default): no SDK; the task's trace context is carried by
 *   hand (`trace-context.ts`: stored at creation, logged by the worker, sent with its Cog requests
 *   and on each webhook attempt), which costs nothing on any other request. Only a context manager
 *   runs, so that a run's context reaches the engine's requests.
 * - an endpoint: the SDK with its instrumentations, spans exported over OTLP/HTTP (JSON, or
 *   protobuf with `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`) to `<endpoint>/v1/traces`,
 *   `MAX_QUEUED_SPANS` at most waiting. What starts a trace is `tracedByDefault`'s policy;
 *   PostgreSQL and Redis command spans only with `OTEL_NODE_ENABLED_INSTRUMENTATIONS=pg,ioredis`.
 */
export function startTelemetry(defaultServiceName: string, settings: TelemetrySettings): TelemetryMode {
  if (state.mode !== 'disabled' || settings.sdkDisabled) return state.mode;
  state.service = settings.serviceName ?? defaultServiceName;
  if (settings.endpoint === undefined) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    state.mode = 'propagate-only';
    return state.mode;
  }
  diag.setLogger(diagToStderr, DiagLogLevel.WARN);
  // JSON by default: exporting as JSON cost the API less than protobuf in every interleaved bench
  // run (docs/performance.md, "Tracing (section 11)"), for bodies about 2.4 times larger.
  const Exporter = settings.protocol === 'http/protobuf' ? ProtobufTraceExporter : JsonTraceExporter;
  const enabled = new Set(settings.enabledInstrumentations ?? []);
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': state.service, 'process.pid': process.pid }),
    autoDetectResources: false,
    sampler: new ParentBasedSampler({ root: new TracePolicySampler(new TraceIdRatioBasedSampler(settings.samplerRatio)) }),
    spanProcessors: [new BoundedExport(new Exporter({ url: `${settings.endpoint}/v1/traces`, headers: { ...settings.headers }, timeoutMillis: 10_000 }))],
    instrumentations: [
      // No Express instrumentation: the route table names the server span and sets http.route
      // (nameServerSpan), and a span per middleware was a large part of the cost of a read.
      // `access_token` is a browser read token (docs/api.md): never in a span. The list replaces the
      // instrumentation's own, so its cloud-signature names are repeated here.
      new HttpInstrumentation({ redactedQueryParams: REDACTED_QUERY_PARAMS, redactedQueryParamsServer: REDACTED_QUERY_PARAMS }),
      new UndiciInstrumentation({ ignoreRequestHook: namesItsParent }),
      // A span per command: most of a task's spans and of their cost, so only when asked for.
      ...(enabled.has('pg') ? [new PgInstrumentation({ requireParentSpan: true })] : []),
      ...(enabled.has('ioredis') ? [new IORedisInstrumentation({ requireParentSpan: true })] : []),
    ],
    // Nothing but traces: metrics stay on /metrics (Prometheus), logs on stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  state.sdk = sdk;
  state.mode = 'export';
  return state.mode;
}

/** How tracing runs in this process (`disabled` until `startTelemetry` started it). */
export function telemetryMode(): TelemetryMode {
  return state.mode;
}

/** Calls `listener` with the number of spans dropped each time some are (for a Prometheus counter); returns the count so far. */
export function onSpansDropped(listener: (n: number) => void): number {
  state.onDrop.push(listener);
  return state.dropped;
}

/** Exports what is still queued (bounded by the exporter's timeout) and stops the SDK. */
export async function stopTelemetry(): Promise<void> {
  const sdk = state.sdk;
  if (!sdk) return;
  state.sdk = undefined;
  await sdk.shutdown().catch(() => undefined);
}
