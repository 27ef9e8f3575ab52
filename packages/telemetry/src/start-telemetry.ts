import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { NodeSDK } from '@opentelemetry/sdk-node';
import type * as SdkExport from './sdk-export';

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
  // The SDK, its exporters and instrumentations only when spans are exported: loaded in every
  // process, they were about 10 MB of the API's heap (a require, so the bundle keeps it lazy).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createExportingSdk } = require('./sdk-export') as typeof SdkExport;
  const sdk = createExportingSdk(state.service, settings, dropped);
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
