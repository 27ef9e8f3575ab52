// The test collector against the serializers of the exporters the services use (OTLP/HTTP, JSON
// by default, protobuf with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf). (The exporter itself loads its transport with a dynamic import, which jest refuses;
// the e2e tracing test covers it in the built services.)
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { startOtlpReceiver, type OtlpReceiver } from '../src';

describe('the OTLP receiver', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => (receiver = await startOtlpReceiver()));
  afterAll(() => receiver.close());

  it.each([
    ['protobuf', 'application/x-protobuf', ProtobufTraceSerializer],
    ['json', 'application/json', JsonTraceSerializer],
  ] as const)('decodes spans, parents, links, attributes and status from the %s exporter', async (encoding, contentType, serializer) => {
    const memory = new InMemorySpanExporter();
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'probe' }),
      spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
    });
    const tracer = provider.getTracer('probe-scope');
    const root = tracer.startSpan('root', { kind: SpanKind.SERVER, attributes: { 'http.route': '/x', n: 42, ok: true, ratio: 0.5 } });
    const other = tracer.startSpan('other');
    const child = tracer.startSpan('child', { kind: SpanKind.CLIENT, links: [{ context: other.spanContext() }] }, trace.setSpan(context.active(), root));
    child.setStatus({ code: SpanStatusCode.ERROR });
    child.end();
    other.end();
    root.end();
    await provider.forceFlush();
    const res = await fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: serializer.serializeRequest(memory.getFinishedSpans())!,
    });
    expect(res.status).toBe(200);
    await provider.shutdown();

    const traceId = root.spanContext().traceId;
    const spans = await receiver.waitForTrace(traceId, (s) => s.length === 2);
    const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
    expect(byName.root).toMatchObject({
      service: 'probe',
      scope: 'probe-scope',
      spanId: root.spanContext().spanId,
      parentSpanId: '',
      kind: 2,
      attributes: { 'http.route': '/x', n: 42, ok: true, ratio: 0.5 },
      encoding,
    });
    expect(byName.child).toMatchObject({
      parentSpanId: root.spanContext().spanId,
      kind: 3,
      statusCode: 2,
      links: [{ traceId: other.spanContext().traceId, spanId: other.spanContext().spanId }],
    });
    expect(byName.root!.endNs).toBeGreaterThanOrEqual(byName.root!.startNs);
    expect(receiver.requests).toBeGreaterThanOrEqual(1);
  });
});
