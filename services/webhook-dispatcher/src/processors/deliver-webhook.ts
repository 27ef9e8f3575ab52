import { performance } from 'node:perf_hooks';
import { UnrecoverableError, type Processor } from 'bullmq';
import { decryptSecret, webhookSecretContext } from '@taskapi/crypto';
import type { Queryable } from '@taskapi/domain';
import { EgressError, type EgressClient } from '@taskapi/egress';
import type { Logger } from '@taskapi/logger';
import { WEBHOOK_QUEUE, type WebhookJob, type WebhookQueue } from '@taskapi/queue';
import { loadDelivery } from '../domain/load-delivery';
import { recordAttempt } from '../domain/record-attempt';
import { retryDelayAfter } from '../domain/retry-schedule';
import { webhookBody, webhookHeaders } from '../domain/webhook-request';
import type { DispatcherMetrics } from '../infra/metrics';

export interface DeliverWebhookDeps {
  db: Queryable;
  egress: EgressClient;
  webhooks: WebhookQueue;
  logger: Logger;
  secretsKey: Buffer;
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  metrics: DispatcherMetrics;
}

export type DeliveryOutcome = { outcome: 'skipped' } | { outcome: 'succeeded' | 'retry' | 'failed'; status_code: number | null };

/** How much of a receiver's answer is read, and how much of it is kept for the console. */
const MAX_RESPONSE_READ = 64 * 1024;
const EXCERPT_CHARS = 500;

/**
 * Sends one attempt of a delivery: body and signature built now (current secret), POSTed through
 * the egress client, the attempt recorded, and the next attempt scheduled as a delayed job when
 * the schedule has one left. Success = 2xx; anything else (timeout, connection or TLS failure,
 * non-2xx, redirects included) is a failed attempt.
 */
export function deliverWebhookProcessor(deps: DeliverWebhookDeps): Processor<WebhookJob, DeliveryOutcome> {
  return async (job) => {
    const parsed = WEBHOOK_QUEUE.schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed job data');
    const { delivery_id: deliveryId, attempt } = parsed.data;
    const delivery = await loadDelivery(deps.db, deliveryId);
    if (!delivery || delivery.state !== 'pending' || delivery.attempt_count !== attempt - 1) return { outcome: 'skipped' };
    const log = deps.logger.child({ delivery_id: deliveryId, public_id: delivery.public_id, attempt, job_id: job.id });

    const secret = decryptSecret(deps.secretsKey, delivery.webhook_secret_ciphertext, webhookSecretContext(delivery.account_id));
    const body = webhookBody(delivery);
    const startedAt = new Date();
    const headers = webhookHeaders({ deliveryId, attempt, secret, body, now: startedAt });
    const t0 = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let excerpt: string | null = null;
    try {
      const res = await deps.egress.request({
        method: 'POST',
        url: delivery.url,
        headers,
        body,
        timeoutMs: deps.timeoutMs,
        maxResponseBytes: MAX_RESPONSE_READ,
      });
      statusCode = res.status;
      excerpt = res.body.length > 0 ? res.body.toString('utf8').slice(0, EXCERPT_CHARS) : null;
      if (statusCode < 200 || statusCode > 299) error = `HTTP ${statusCode}`;
    } catch (err) {
      if (!(err instanceof EgressError)) throw err;
      error = err.message;
    }
    const durationMs = Math.round(performance.now() - t0);
    const ok = error === null;
    const retryInMs = ok ? null : retryDelayAfter(attempt, deps.retryDelaysMs);
    const state = ok ? 'succeeded' : retryInMs === null ? 'failed' : 'pending';

    const recorded = await recordAttempt(deps.db, {
      deliveryId,
      attempt,
      startedAt,
      durationMs,
      statusCode,
      error,
      responseExcerpt: excerpt,
      state,
      retryInMs,
    });
    if (!recorded) return { outcome: 'skipped' };
    deps.metrics.observeAttempt(ok ? 'succeeded' : state === 'failed' ? 'failed' : 'retry', durationMs / 1000);
    if (state === 'pending' && retryInMs !== null) {
      try {
        await deps.webhooks.enqueueAttempt(deliveryId, attempt + 1, retryInMs);
      } catch (err) {
        log.warn('retry not enqueued; the sweeper will schedule it', { error: (err as Error).message });
      }
    }
    if (ok) log.info('webhook delivered', { status_code: statusCode, duration_ms: durationMs });
    else log.warn(state === 'failed' ? 'webhook delivery given up' : 'webhook attempt failed; retry scheduled', { error, retry_in_ms: retryInMs, duration_ms: durationMs });
    return { outcome: ok ? 'succeeded' : state === 'failed' ? 'failed' : 'retry', status_code: statusCode };
  };
}
