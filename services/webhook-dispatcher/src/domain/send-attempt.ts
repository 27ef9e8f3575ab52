import { performance } from 'node:perf_hooks';
import { EgressError, type EgressClient } from '@taskapi/egress';
import { storableText } from '@taskapi/domain';
import type { WebhookAttemptResult } from '@taskapi/queue';

/** How much of a receiver's answer is read, and how much of it is kept for the console. */
const MAX_RESPONSE_READ = 64 * 1024;
const EXCERPT_CHARS = 500;

/** One attempt's request, built and signed before its number is claimed. */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
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
  try {
    const res = await egress.request({ method: 'POST', url: req.url, headers: req.headers, body: req.body, timeoutMs, maxResponseBytes: MAX_RESPONSE_READ });
    statusCode = res.status;
    // The receiver chooses the bytes: a NUL (or a pair the cut splits) would make the attempt unrecordable.
    excerpt = res.body.length > 0 ? storableText(res.body.toString('utf8'), EXCERPT_CHARS) : null;
    if (statusCode < 200 || statusCode > 299) error = `HTTP ${statusCode}`;
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    error = err.message;
  }
  return { finished_at: Date.now(), duration_ms: Math.round(performance.now() - t0), status_code: statusCode, error, response_excerpt: excerpt };
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
