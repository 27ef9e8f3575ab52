import { SpanKind, type Attributes, type Context, type Link } from '@opentelemetry/api';
import { SamplingDecision, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace';
import { tracedByDefault } from './traced-requests';

const NOT_RECORDED: SamplingResult = { decision: SamplingDecision.NOT_RECORD };

/**
 * The root sampler: a request that starts a trace (no `traceparent`, or a malformed one) is offered
 * to `inner` (the ratio of `OTEL_TRACES_SAMPLER_ARG`) only when `tracedByDefault` says so; every
 * other root span (a run, a sweeper's re-add, an attempt of a task created without trace) goes
 * to `inner` as before. Read from the attributes the server span has at its start
 * (`http.request.method`, `url.path`; `withServerSpans`).
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
