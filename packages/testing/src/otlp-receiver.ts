import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { waitFor } from './wait';

/** A span's link to another span (a batch's span, say, linking the spans it gathers). */
export interface ReceivedLink {
  traceId: string;
  spanId: string;
}

/** One span as a collector received it (ids as lowercase hex, times in ns since the epoch). */
export interface ReceivedSpan {
  service: string;
  /** The resource's attributes (`service.name`, `process.pid`, …). */
  resource: Record<string, string | number | boolean>;
  scope: string;
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, string | number | boolean>;
  links: ReceivedLink[];
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** How the export carrying it was encoded (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
  encoding: 'protobuf' | 'json';
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (POST /v1/traces). */
  readonly requests: number;
  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[];
  /** Waits until `done(spans of traceId)` holds. */
  waitForTrace(traceId: string, done: (spans: ReceivedSpan[]) => boolean, opts?: { timeoutMs?: number; what?: string }): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/**
 * A collector for tests: an HTTP server taking OTLP/HTTP exports (`POST /v1/traces`, an
 * `ExportTraceServiceRequest` in protobuf or JSON, gzip or not) and keeping their spans. Answers
 * 200 with an empty `ExportTraceServiceResponse`; anything else is 404.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      requests++;
      try {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        // OTLP/HTTP servers take both encodings and answer in the request's.
        const type = String(req.headers['content-type']);
        if (type.startsWith('application/x-protobuf')) {
          spans.push(...decodeExportTraceServiceRequest(body));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        } else if (type.startsWith('application/json')) {
          spans.push(...decodeJsonExportTraceServiceRequest(body));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else {
          throw new Error(`unexpected content-type ${type}`);
        }
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end((err as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const trace = (traceId: string) => spans.filter((s) => s.traceId === traceId);
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get requests() {
      return requests;
    },
    trace,
    waitForTrace: (traceId, done, opts = {}) =>
      waitFor(() => (done(trace(traceId)) ? trace(traceId) : undefined), { timeoutMs: opts.timeoutMs ?? 20_000, what: opts.what ?? `the spans of trace ${traceId}` }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// Protobuf wire format, as far as opentelemetry/proto/trace/v1 needs it (field numbers from
// trace.proto, common.proto and resource.proto).

interface Field {
  no: number;
  wire: number;
  /** Varint and fixed values. */
  num: bigint;
  /** Length-delimited values. */
  bytes: Buffer;
}

function* fields(buf: Buffer): Generator<Field> {
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    const empty = Buffer.alloc(0);
    switch (wire) {
      case 0:
        yield { no, wire, num: varint(), bytes: empty };
        break;
      case 1:
        yield { no, wire, num: buf.readBigUInt64LE(pos), bytes: buf.subarray(pos, pos + 8) };
        pos += 8;
        break;
      case 2: {
        const len = Number(varint());
        if (pos + len > buf.length) throw new Error('truncated field');
        yield { no, wire, num: 0n, bytes: buf.subarray(pos, pos + len) };
        pos += len;
        break;
      }
      case 5:
        yield { no, wire, num: BigInt(buf.readUInt32LE(pos)), bytes: buf.subarray(pos, pos + 4) };
        pos += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${wire}`);
    }
  }
}

function anyValue(buf: Buffer): string | number | boolean {
  for (const f of fields(buf)) {
    if (f.no === 1) return f.bytes.toString('utf8');
    if (f.no === 2) return f.num !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.num));
    if (f.no === 4) return f.bytes.readDoubleLE(0);
    return `<${f.no}>`; // arrays, key-value lists and bytes: not needed by the tests
  }
  return '';
}

function attributes(into: Record<string, string | number | boolean>, kv: Buffer): void {
  let key = '';
  let value: string | number | boolean = '';
  for (const f of fields(kv)) {
    if (f.no === 1) key = f.bytes.toString('utf8');
    else if (f.no === 2) value = anyValue(f.bytes);
  }
  into[key] = value;
}

function decodeSpan(buf: Buffer, resource: Record<string, string | number | boolean>, scope: string): ReceivedSpan {
  const span: ReceivedSpan = {
    service: String(resource['service.name'] ?? ''),
    resource,
    scope,
    traceId: '',
    spanId: '',
    parentSpanId: '',
    name: '',
    kind: 0,
    startNs: 0n,
    endNs: 0n,
    attributes: {},
    links: [],
    statusCode: 0,
    encoding: 'protobuf',
  };
  for (const f of fields(buf)) {
    switch (f.no) {
      case 1: span.traceId = f.bytes.toString('hex'); break;
      case 2: span.spanId = f.bytes.toString('hex'); break;
      case 4: span.parentSpanId = f.bytes.toString('hex'); break;
      case 5: span.name = f.bytes.toString('utf8'); break;
      case 6: span.kind = Number(f.num); break;
      case 7: span.startNs = f.num; break;
      case 8: span.endNs = f.num; break;
      case 9: attributes(span.attributes, f.bytes); break;
      case 13: {
        const link: ReceivedLink = { traceId: '', spanId: '' };
        for (const l of fields(f.bytes)) {
          if (l.no === 1) link.traceId = l.bytes.toString('hex');
          else if (l.no === 2) link.spanId = l.bytes.toString('hex');
        }
        span.links.push(link);
        break;
      }
      case 15:
        for (const s of fields(f.bytes)) if (s.no === 3) span.statusCode = Number(s.num);
        break;
      default:
        break;
    }
  }
  return span;
}

/** The spans of an OTLP `ExportTraceServiceRequest` in protobuf. */
export function decodeExportTraceServiceRequest(buf: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of fields(buf)) {
    if (resourceSpans.no !== 1) continue;
    const resource: Record<string, string | number | boolean> = {};
    const scopeSpans: Buffer[] = [];
    for (const f of fields(resourceSpans.bytes)) {
      if (f.no === 1) for (const r of fields(f.bytes)) if (r.no === 1) attributes(resource, r.bytes);
      if (f.no === 2) scopeSpans.push(f.bytes);
    }
    for (const ss of scopeSpans) {
      let scope = '';
      const spanBufs: Buffer[] = [];
      for (const f of fields(ss)) {
        if (f.no === 1) for (const s of fields(f.bytes)) if (s.no === 1) scope = s.bytes.toString('utf8');
        if (f.no === 2) spanBufs.push(f.bytes);
      }
      for (const b of spanBufs) out.push(decodeSpan(b, resource, scope));
    }
  }
  return out;
}

// OTLP/JSON (the protobuf messages in JSON with lowerCamelCase names; ids in hex, enums as
// numbers, 64-bit integers as strings or numbers), as far as the tests need it.

interface JsonKeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number } | undefined;
}

interface JsonSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  kind?: number;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: JsonKeyValue[];
  links?: Array<{ traceId?: string; spanId?: string }>;
  status?: { code?: number };
}

interface JsonExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: Array<{ scope?: { name?: string }; spans?: JsonSpan[] }>;
  }>;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value?.stringValue !== undefined) out[key] = value.stringValue;
    else if (value?.boolValue !== undefined) out[key] = value.boolValue;
    else if (value?.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) out[key] = value.doubleValue;
    else out[key] = '<other>'; // arrays, key-value lists and bytes: not needed by the tests
  }
  return out;
}

/** The spans of an OTLP `ExportTraceServiceRequest` in JSON. */
export function decodeJsonExportTraceServiceRequest(buf: Buffer): ReceivedSpan[] {
  const request = JSON.parse(buf.toString('utf8')) as JsonExportTraceServiceRequest;
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      const scope = scopeSpans.scope?.name ?? '';
      for (const span of scopeSpans.spans ?? []) {
        out.push({
          service: String(resource['service.name'] ?? ''),
          resource,
          scope,
          traceId: (span.traceId ?? '').toLowerCase(),
          spanId: (span.spanId ?? '').toLowerCase(),
          parentSpanId: (span.parentSpanId ?? '').toLowerCase(),
          name: span.name ?? '',
          kind: span.kind ?? 0,
          startNs: BigInt(span.startTimeUnixNano ?? 0),
          endNs: BigInt(span.endTimeUnixNano ?? 0),
          attributes: jsonAttributes(span.attributes),
          links: (span.links ?? []).map((l) => ({ traceId: (l.traceId ?? '').toLowerCase(), spanId: (l.spanId ?? '').toLowerCase() })),
          statusCode: span.status?.code ?? 0,
          encoding: 'json',
        });
      }
    }
  }
  return out;
}
