// What starts a trace when the SDK exports (docs/architecture.md, "Tracing"): writes do; reads,
// event streams, the public routes, probes and /metrics do not, unless the caller's sampled
// `traceparent` says so (the parent-based sampler's part, checked end to end in
// test/e2e/tracing.test.ts). The sampler is asked exactly as a server span (withServerSpans) asks it.
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { AlwaysOnSampler, SamplingDecision } from '@opentelemetry/sdk-trace';
import { TracePolicySampler } from '../src/trace-policy';
import { tracedByDefault } from '../src/traced-requests';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('the trace policy', () => {
  it('writes start a trace: creations, cancels, console and API writes', () => {
    for (const [method, path] of [
      ['POST', '/api/tasks/image-generation'],
      ['POST', '/api/tasks/batch'],
      ['POST', '/api/tasks/task_abc/cancel'],
      ['POST', '/console/api/keys'],
      ['DELETE', '/api/keys/key_abc'],
      ['PUT', '/api/spend-limit'],
      ['PATCH', '/console/api/account'],
    ]) {
      expect([method, path, tracedByDefault(method, path)]).toEqual([method, path, true]);
    }
  });

  it('reads, event streams, public routes, probes and scrapes do not', () => {
    for (const [method, path] of [
      ['GET', '/api/tasks/task_abc'],
      ['GET', '/api/tasks'],
      ['GET', '/api/tasks/task_abc/events'],
      ['HEAD', '/api/tasks/task_abc'],
      ['GET', '/api/public/tasks/task_abc'],
      ['POST', '/api/public/tasks/task_abc/cancel'],
      ['GET', '/healthz'],
      ['GET', '/readyz'],
      ['GET', '/metrics'],
      ['OPTIONS', '/api/tasks/image-generation'],
      ['_OTHER', '/api/tasks/image-generation'],
    ]) {
      expect([method, path, tracedByDefault(method, path)]).toEqual([method, path, false]);
    }
  });

  it('the root sampler: server spans by the policy, anything else by the inner sampler', () => {
    const sampler = new TracePolicySampler(new AlwaysOnSampler());
    const ask = (kind: SpanKind, attributes: Record<string, string>) => sampler.shouldSample(ROOT_CONTEXT, TRACE, 'span', kind, attributes, []).decision;
    expect(ask(SpanKind.SERVER, { 'http.request.method': 'POST', 'url.path': '/api/tasks/image-generation' })).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(ask(SpanKind.SERVER, { 'http.request.method': 'GET', 'url.path': '/api/tasks/task_abc' })).toBe(SamplingDecision.NOT_RECORD);
    expect(ask(SpanKind.SERVER, { 'http.request.method': 'GET', 'url.path': '/healthz' })).toBe(SamplingDecision.NOT_RECORD);
    expect(ask(SpanKind.SERVER, {})).toBe(SamplingDecision.NOT_RECORD);
    // A run, a sweeper's re-add, an attempt of a task without trace: not requests, the inner sampler's.
    expect(ask(SpanKind.INTERNAL, {})).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(ask(SpanKind.PRODUCER, {})).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(ask(SpanKind.CLIENT, {})).toBe(SamplingDecision.RECORD_AND_SAMPLED);
  });
});
