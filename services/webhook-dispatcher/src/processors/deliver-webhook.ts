import { DelayedError, UnrecoverableError, type Job, type Processor } from 'bullmq';
import { isDatabaseUnavailable, type SqlExecutor } from '@taskapi/db';
import type { EgressClient } from '@taskapi/egress';
import { flatLineWriter, type Logger } from '@taskapi/logger';
import { WEBHOOK_QUEUE, type WebhookAttemptResult, type WebhookJob, type WebhookQueue } from '@taskapi/queue';
import { retryWhileUnavailable } from '@taskapi/service';
import { contextOf, inSpan, SpanKind } from '@taskapi/telemetry';
import { attemptTurn } from '../domain/attempt-turn';
import { retryDueInMs, stateAfterAttempt } from '../domain/retry-schedule';
import { sendAttempt, unknownResult, type WebhookRequest } from '../domain/send-attempt';
import { webhookRequest } from '../domain/webhook-request';
import type { DispatcherMetrics } from '../infra/metrics';
import { createSecretCache, type SecretCache } from '../infra/secret-cache';
import { claimAndLoad, claimAttempt, loadDelivery, recordAttempt, type DeliveryToSend } from '../repositories/deliveries';

export interface DeliverWebhookDeps {
  db: SqlExecutor;
  egress: EgressClient;
  webhooks: WebhookQueue;
  logger: Logger;
  secretsKey: Buffer;
  timeoutMs: number;
  retryDelaysMs: readonly number[];
  metrics: DispatcherMetrics;
  /** Aborted when the dispatcher stops: an attempt waiting for PostgreSQL to record its result stops waiting. */
  stopping: AbortSignal;
}

export type DeliveryOutcome = { outcome: 'skipped' } | { outcome: 'succeeded' | 'retry' | 'failed'; status_code: number | null };

const SKIPPED: DeliveryOutcome = { outcome: 'skipped' };

/** Fields of every log line about one attempt (on the line itself: no child logger per job). */
interface AttemptFields {
  delivery_id: string;
  attempt: number;
  job_id: string | undefined;
  public_id?: string;
  trace_id?: string;
}

/** Time allowed, beyond the request timeout, for a live run to record its attempt. */
const LIVE_CLAIM_GRACE_MS = 30_000;

/**
 * Sends one attempt of a delivery: body and signature built now (current secret), the attempt
 * number claimed, the POST sent through the egress client, the result recorded, and the next
 * attempt scheduled as a delayed job when the schedule has one left.
 *
 * Why the number is claimed in PostgreSQL before the POST leaves (an "in flight" attempt row,
 * completed afterwards), rather than only kept in the job until it can be recorded: PostgreSQL is
 * the one durable record of deliveries — Redis may lose its jobs, and the sweeper then rebuilds
 * them from the database — so only a row written before sending guarantees that a number, once
 * sent, is never sent again. A run that dies after sending leaves the claimed row; the next run of
 * the job records that attempt as one whose result is unknown and goes on with the next number,
 * where it would otherwise send the same number a second time. The claim costs one statement per
 * attempt: the price of a write-ahead record of what went out.
 *
 * If PostgreSQL is unreachable when the result comes back, the result is not lost: it is written
 * into the job (so that a restarted dispatcher records it instead of guessing) and the recording
 * is retried with backoff until the database answers. Recording is conditional on the row still
 * being in flight, so an attempt is recorded exactly once however many times that is tried.
 */
export function deliverWebhookProcessor(deps: DeliverWebhookDeps): Processor<WebhookJob, DeliveryOutcome> {
  // How long a claimed attempt may stay unrecorded while its run may still be alive: the request's
  // timeout plus time to record it. Only older claims are taken for those of a run that died.
  const liveClaimMs = deps.timeoutMs + LIVE_CLAIM_GRACE_MS;
  const secrets = createSecretCache();
  const delivered = deliveredLine(deps.logger);
  return async (job, token) => {
    const parsed = WEBHOOK_QUEUE.schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed job data');
    const { delivery_id: deliveryId, attempt, result: owed, account_id: jobAccountId } = parsed.data;
    const fields: AttemptFields = { delivery_id: deliveryId, attempt, job_id: job.id };
    // An earlier run sent this attempt and kept its result in the job: only the recording is left.
    if (owed) return finishAttempt(deps, delivered, job, fields, owed, jobAccountId);

    // The usual case: the job names the account, whose current secret this process decrypted
    // lately. Claim and load in one statement; anything unusual falls through to the full path.
    const known = jobAccountId === undefined ? undefined : secrets.known(jobAccountId);
    if (jobAccountId !== undefined && known) {
      const now = new Date();
      const claimed = await claimAndLoad(deps.db, { deliveryId, attempt, accountId: jobAccountId, ciphertext: known.ciphertext, startedAt: now });
      if (claimed) {
        // As below: from here on, in the job's consumer span, in the task's trace.
        return inDeliverySpan(job, claimed.trace_parent, claimed.public_id, async () => {
          const result = await sendAttempt(deps.egress, webhookRequest(claimed, known.keys, attempt, now), deps.timeoutMs);
          return finishAttempt(deps, delivered, job, { ...fields, public_id: claimed.public_id }, result, jobAccountId);
        });
      }
    }

    const delivery = await loadDelivery(deps.db, deliveryId);
    // Only a run holding the job's lock (`token`) can postpone the job.
    const turn = attemptTurn(delivery, attempt, { liveClaimMs, canWait: token !== undefined });
    if (!delivery || turn.action === 'skip') return SKIPPED;
    if (turn.action === 'wait') {
      await job.moveToDelayed(Date.now() + turn.inMs, token);
      throw new DelayedError();
    }
    if (turn.action === 'record-unknown') {
      deps.logger.warn('webhook attempt claimed by a run that stopped; recorded with an unknown result', fields);
      return inDeliverySpan(job, delivery.trace_parent, delivery.public_id, () => finishAttempt(deps, delivered, job, fields, unknownResult(), delivery.account_id));
    }

    const startedAt = new Date();
    // Built before the claim, so that a request that cannot be built (an undecryptable secret)
    // never takes a number.
    const request = buildRequest(deps, secrets, delivery, attempt, startedAt);
    // Once the delivery is known, the rest is in the job's consumer span, in its task's trace: the
    // attempt's client span, the statements and Redis calls (opt-in command spans), the next
    // attempt's producer span.
    return inDeliverySpan(job, delivery.trace_parent, delivery.public_id, async () => {
      if (!(await claimAttempt(deps.db, deliveryId, attempt, startedAt))) return SKIPPED;
      const result = await sendAttempt(deps.egress, request, deps.timeoutMs);
      return finishAttempt(deps, delivered, job, { ...fields, public_id: delivery.public_id }, result, delivery.account_id);
    });
  };
}

/** Runs `fn` in the delivery job's consumer span, a child of the creation's (the task's stored `traceparent`). */
function inDeliverySpan<T>(job: Job<WebhookJob>, traceParent: string | null, publicId: string, fn: () => Promise<T>): Promise<T> {
  return inSpan(
    'deliver webhook',
    {
      kind: SpanKind.CONSUMER,
      parent: contextOf(traceParent),
      attributes: {
        'taskapi.task.id': publicId,
        'taskapi.webhook.attempt': job.data.attempt,
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': WEBHOOK_QUEUE.name,
        'messaging.message.id': job.id ?? '',
      },
    },
    fn,
  );
}

function buildRequest(deps: DeliverWebhookDeps, secrets: SecretCache, delivery: DeliveryToSend, attempt: number, now: Date): WebhookRequest {
  return webhookRequest(delivery, secrets.decrypt(deps.secretsKey, delivery.account_id, delivery.webhook_secret_ciphertext), attempt, now);
}

type DeliveredLine = (fields: AttemptFields, statusCode: number | null, durationMs: number) => void;

/** The info line of each delivered webhook, one per delivery: written without winston's format chain. */
function deliveredLine(logger: Logger): DeliveredLine {
  const write = flatLineWriter(logger, 'webhook delivered', ['delivery_id', 'attempt', 'job_id', 'public_id', 'status_code', 'duration_ms', 'trace_id']);
  return (fields, statusCode, durationMs) => {
    if (logger.isInfoEnabled()) write('info', [fields.delivery_id, fields.attempt, fields.job_id, fields.public_id, statusCode, durationMs, fields.trace_id]);
  };
}

/** Records a claimed attempt's result (waiting out a PostgreSQL outage), then schedules the next attempt. */
async function finishAttempt(
  deps: DeliverWebhookDeps,
  delivered: DeliveredLine,
  job: Job<WebhookJob>,
  fields: AttemptFields,
  result: WebhookAttemptResult,
  accountId: string | undefined,
): Promise<DeliveryOutcome> {
  if (result.trace_id) fields = { ...fields, trace_id: result.trace_id };
  const { delivery_id: deliveryId, attempt } = job.data;
  const { state, retryDelayMs } = stateAfterAttempt(attempt, result.error, deps.retryDelaysMs);
  const ok = state === 'succeeded';
  const retryInMs = () => (retryDelayMs === null ? null : retryDueInMs(retryDelayMs, result.finished_at, Date.now()));

  let kept: Promise<void> | undefined;
  const keepInJob = () => {
    if (kept || job.data.result) return;
    kept = job.updateData({ ...job.data, result }).catch((err: unknown) => {
      deps.logger.warn('could not keep the webhook attempt result in its job', { ...fields, error: (err as Error).message });
    });
  };
  let recorded: { done: boolean; retryIn: number | null };
  try {
    recorded = await retryWhileUnavailable(
      async () => {
        const retryIn = retryInMs();
        const done = await recordAttempt(deps.db, {
          deliveryId,
          attempt,
          durationMs: result.duration_ms,
          statusCode: result.status_code,
          error: result.error,
          responseExcerpt: result.response_excerpt,
          traceId: result.trace_id ?? null,
          state,
          retryInMs: retryIn,
        });
        return { done, retryIn };
      },
      {
        signal: deps.stopping,
        unavailable: isDatabaseUnavailable,
        onFailure: (err, failures) => {
          keepInJob();
          if (failures === 1 || failures % 10 === 0) {
            deps.logger.warn('webhook attempt result not recorded yet; retrying', { ...fields, error: (err as Error).message, failures, status_code: result.status_code });
          }
        },
      },
    );
  } catch (err) {
    // The job fails this run and BullMQ runs it again; the result must be in it by then.
    await kept;
    throw err;
  }
  const { done, retryIn } = recorded;
  if (!done) return SKIPPED;
  deps.metrics.observeAttempt(ok ? 'succeeded' : state === 'failed' ? 'failed' : 'retry', result.duration_ms / 1000);
  if (state === 'pending' && retryIn !== null) {
    try {
      await deps.webhooks.enqueueAttempt(deliveryId, attempt + 1, retryIn, accountId);
    } catch (err) {
      deps.logger.warn('retry not enqueued; the sweeper will schedule it', { ...fields, error: (err as Error).message });
    }
  }
  if (ok) delivered(fields, result.status_code, result.duration_ms);
  else {
    deps.logger.warn(state === 'failed' ? 'webhook delivery given up' : 'webhook attempt failed; retry scheduled', {
      ...fields,
      error: result.error,
      retry_in_ms: retryIn,
      duration_ms: result.duration_ms,
    });
  }
  return { outcome: ok ? 'succeeded' : state === 'failed' ? 'failed' : 'retry', status_code: result.status_code };
}
