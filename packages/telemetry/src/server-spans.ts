import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import { RPCType, setRPCMetadata } from '@opentelemetry/core';
import { telemetryMode } from './start-telemetry';
import { tracedByDefault } from './traced-requests';

/**
 * Query parameters whose values spans never carry: the HTTP instrumentation's defaults (cloud
 * storage signatures) and our read token (`access_token`, docs/api.md).
 */
export const REDACTED_QUERY_PARAMS = ['sig', 'Signature', 'AWSAccessKeyId', 'X-Goog-Signature', 'X-Amz-Signature', 'X-Amz-Credential', 'X-Amz-Security-Token', 'access_token'];
const REDACTED = new Set(REDACTED_QUERY_PARAMS);

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** A query parameter's name as a query parser reads it (`access%5Ftoken` is `access_token`). */
function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/** `url.query` as a span carries it: the values of `REDACTED_QUERY_PARAMS` replaced by `REDACTED`, however the name is encoded. */
export function redactedQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq !== -1 && REDACTED.has(decodedName(pair.slice(0, eq))) ? `${pair.slice(0, eq)}=REDACTED` : pair;
    })
    .join('&');
}

/** `host[:port]` of a Host header, split (an IPv6 literal keeps its brackets off). */
function hostAndPort(host: string | undefined): { address?: string; port?: number } {
  if (!host) return {};
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host);
  if (!m) return {};
  return { address: m[1]!.replace(/^\[|\]$/g, ''), ...(m[2] ? { port: Number(m[2]) } : {}) };
}

/**
 * The HTTP server span of each request a process serves (docs/architecture.md, "Tracing"), made
 * here rather than by the HTTP instrumentation's server side (which is turned off): a request the
 * trace policy leaves out — no `traceparent` and not a write (`tracedByDefault`) — gets no span
 * and no context at all, where the instrumentation paid for one (its attributes, the sampler,
 * binding the request and response to a context) on every read, probe and scrape. The others get
 * a span named as the instrumentation named it — `<METHOD>` until the route table names it
 * (`nameServerSpan`) — with the attributes listed in docs/architecture.md ("Server spans"), the
 * caller's `traceparent` as its parent (the sampler keeps the caller's decision), `url.query`
 * redacted, the status code, an error status for a 5xx.
 * `opts.path` rewrites the path a span carries (a capability token in it). Without the SDK
 * exporting (`telemetryMode`), `listener` itself.
 */
export function withServerSpans(listener: RequestListener, opts: { path?: (path: string) => string } = {}): RequestListener {
  if (telemetryMode() !== 'export') return listener;
  const tracer = trace.getTracer('taskapi-http');
  const spanPath = opts.path ?? ((path: string) => path);
  return (req, res) => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (req.headers.traceparent === undefined && !tracedByDefault(method, path)) {
      // In no trace, even when the connection resumed in a traced request's context (the next of
      // pipelined requests starts when the one before has finished); the check costs less than
      // entering a context on every read.
      if (trace.getSpan(context.active()) === undefined) listener(req, res);
      else context.with(ROOT_CONTEXT, () => listener(req, res));
      return;
    }
    const { address, port } = hostAndPort(req.headers.host);
    const attributes: Attributes = {
      'http.request.method': method,
      'url.scheme': 'encrypted' in req.socket ? 'https' : 'http',
      'url.path': spanPath(path),
      'network.protocol.version': req.httpVersion,
    };
    if (q !== -1) attributes['url.query'] = redactedQuery(url.slice(q + 1));
    if (address !== undefined) attributes['server.address'] = address;
    if (port !== undefined) attributes['server.port'] = port;
    if (req.socket.remoteAddress !== undefined) attributes['network.peer.address'] = req.socket.remoteAddress;
    if (req.socket.remotePort !== undefined) attributes['network.peer.port'] = req.socket.remotePort;
    const userAgent = req.headers['user-agent'];
    if (userAgent !== undefined) attributes['user_agent.original'] = userAgent;
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent);
    const ctx = setRPCMetadata(trace.setSpan(parent, span), { type: RPCType.HTTP, span });
    // Listeners the request's handlers add (a body parser's `end`, the access line's `finish`) run
    // in the span's context, not in the connection's.
    context.bind(ctx, req);
    context.bind(ctx, res);
    res.once('close', () => {
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', res.statusCode);
        // The client's address as Express reads it (`trust proxy`: behind a load balancer, the
        // forwarded one), else the peer's.
        const ip = (req as { ip?: unknown }).ip;
        const client = typeof ip === 'string' ? ip : req.socket.remoteAddress;
        if (client !== undefined) span.setAttribute('client.address', client);
        if (res.statusCode >= 500) {
          span.setAttribute('error.type', String(res.statusCode));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      }
      span.end();
    });
    context.with(ctx, () => listener(req, res));
  };
}
