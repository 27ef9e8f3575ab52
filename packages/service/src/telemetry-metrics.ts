import { Counter, type Registry } from 'prom-client';
import { onSpansDropped, stopTelemetry } from '@taskapi/telemetry';
import type { ServiceName } from './readiness-metrics';

/**
 * Registers `taskapi_otel_spans_dropped_total{service}` on `registry`: trace spans this process
 * dropped instead of exporting (the export queue was full, or an export failed: an unreachable
 * collector). Always 0 with tracing off or without an endpoint.
 */
export function registerTelemetryMetrics(registry: Registry, service: ServiceName): void {
  const dropped = new Counter({
    name: 'taskapi_otel_spans_dropped_total',
    help: 'Trace spans dropped instead of exported (export queue full, or the OTLP export failed)',
    labelNames: ['service'],
    registers: [registry],
  });
  dropped.inc({ service }, onSpansDropped((n) => dropped.inc({ service }, n)));
}

/** Exports the spans still queued, for at most `timeoutMs`: a stop must not wait on a collector that is gone. */
export async function flushTelemetry(timeoutMs = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([stopTelemetry(), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()))]);
  clearTimeout(timer);
}
