import { performance } from 'node:perf_hooks';
import { EgressError, type EgressClient } from '@taskapi/egress';
import { storableText } from '@taskapi/domain';
import type { WebhookAttemptResult } from '@taskapi/queue';
import { outgoingTraceParent, SpanKind, SpanStatusCode, startSpan, traceIdOf, withContext } from '@taskapi/telemetry';

/** How much of a receiver's answer is read, and how much of it is kept for the console. */
const MAX_RESPONSE_READ = 64 * 1024;
const EXCERPT_CHARS = 500;

/** One attempt's request, built and signed before its number is claimed. */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The task's `traceparent`: without the SDK, the `traceparent` the attempt sends continues its trace. */
  traceParent: string | null;
}

/**
 * POSTs one attempt through the egress client. Success = 2xx (`error` null); anything else
 * (timeout, connection or TLS failure, non-2xx, redirects included) is a failed attempt.
 */
export async function sendAttempt(egress: EgressClient, req: WebhookRequest, timeoutMs: number): Promise<WebhookAttemptResult> {
  const t0 = performance.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  let excerpt: string | null = null;
  // The attempt's client span, a child of the delivery job's consumer span (the active one, in the
  // task's trace); the receiver gets its `traceparent` beside the spec's headers (docs/webhooks.md).
  // Without the SDK the span is a no-op and the `traceparent` is made by hand: the task's trace, a
  // new span id.
  const traced = startSpan('webhook attempt', {
    kind: SpanKind.CLIENT,
    attributes: { 'http.request.method': 'POST', 'server.address': new URL(req.url).hostname },
  });
  const traceParent = outgoingTraceParent(traced, req.traceParent);
  const headers = traceParent ? { ...req.headers, traceparent: traceParent } : req.headers;
  try {
    const res = await withContext(traced.context, () =>
      egress.request({ method: 'POST', url: req.url, headers, body: req.body, timeoutMs, maxResponseBytes: MAX_RESPONSE_READ }),
    );
    statusCode = res.status;
    traced.span.setAttribute('http.response.status_code', statusCode);
    // The receiver chooses the bytes: a NUL (or a pair the cut splits) would make the attempt unrecordable.
    excerpt = res.body.length > 0 ? storableText(res.body.toString('utf8'), EXCERPT_CHARS) : null;
    if (statusCode < 200 || statusCode > 299) error = `HTTP ${statusCode}`;
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    error = err.message;
  } finally {
    if (error !== null) traced.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    traced.span.end();
  }
  return {
    finished_at: Date.now(),
    duration_ms: Math.round(performance.now() - t0),
    status_code: statusCode,
    error,
    response_excerpt: excerpt,
    trace_id: traceIdOf(traceParent) ?? null,
  };
}

/**
 * The result of an attempt that was claimed but whose result was never recorded (the dispatcher
 * died, or lost the database and then stopped, before recording it): it may or may not have
 * reached the receiver.
 */
export function unknownResult(): WebhookAttemptResult {
  return { finished_at: Date.now(), duration_ms: 0, status_code: null, error: UNKNOWN_RESULT_ERROR, response_excerpt: null };
}

export const UNKNOWN_RESULT_ERROR = 'result unknown: the dispatcher stopped before recording it';
