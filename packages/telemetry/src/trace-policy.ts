import { SpanKind, type Attributes, type Context, type Link } from '@opentelemetry/api';
import { SamplingDecision, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace';

/**
 * Which requests start a trace of their own (docs/architecture.md, "Tracing"): what changes a
 * task or an account — creations, cancels, console and API writes (any POST, PUT, PATCH or
 * DELETE) — except under `/api/public/`. Reads (`GET /api/tasks/{id}` and the list, polled by
 * clients), event streams, `/api/public/*`, probes and `/metrics` are traced only when the caller
 * sends a sampled `traceparent` (the parent-based sampler keeps the caller's decision).
 * @param method the request's method (upper case, as the HTTP instrumentation reports it).
 * @param path the request's path, without its query.
 */
export function tracedByDefault(method: string | undefined, path: string | undefined): boolean {
  if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH' && method !== 'DELETE') return false;
  return path === undefined || !(path === '/api/public' || path.startsWith('/api/public/'));
}

const NOT_RECORDED: SamplingResult = { decision: SamplingDecision.NOT_RECORD };

/**
 * The root sampler: a request that starts a trace (no `traceparent`, or a malformed one) is offered
 * to `inner` (the ratio of `OTEL_TRACES_SAMPLER_ARG`) only when `tracedByDefault` says so; every
 * other root span (a run, a sweeper's re-add, an attempt of a task created without trace) goes
 * to `inner` as before. Read from the attributes the HTTP instrumentation sets at the span's start
 * (`http.request.method`, `url.path`).
 */
export class TracePolicySampler implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    if (spanKind === SpanKind.SERVER) {
      const method = attributes['http.request.method'];
      const path = attributes['url.path'];
      if (!tracedByDefault(typeof method === 'string' ? method : undefined, typeof path === 'string' ? path : undefined)) return NOT_RECORDED;
    }
    return this.inner.shouldSample(context, traceId, spanName, spanKind, attributes, links);
  }

  toString(): string {
    return `TracePolicySampler{${this.inner.toString()}}`;
  }
}
