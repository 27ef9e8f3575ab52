import type { Queryable } from '@taskapi/domain';
import { deliveryJobId, type WebhookQueue } from '@taskapi/queue';

const BATCH = 1000;

/**
 * Every pending delivery whose next attempt is overdue by more than `graceMs` must have its job:
 * Redis lost it (restart without persistence, FLUSHALL), or a process died between commit and
 * enqueue. The job is added again under its deterministic id; a job BullMQ already finished
 * without recording the attempt is replaced.
 * @returns how many deliveries were re-enqueued.
 */
export async function sweepDeliveries(db: Queryable, webhooks: WebhookQueue, graceMs: number): Promise<number> {
  const { rows } = await db.query<{ id: string; attempt_count: number }>({
    name: 'dispatcher-sweep-deliveries',
    text: `SELECT id, attempt_count FROM webhook_deliveries
            WHERE state = 'pending' AND next_attempt_at < now() - make_interval(secs => $1::float8 / 1000)
            ORDER BY next_attempt_at LIMIT ${BATCH}`,
    values: [graceMs],
  });
  let requeued = 0;
  for (const row of rows) {
    const attempt = row.attempt_count + 1;
    const jobId = deliveryJobId(row.id, attempt);
    const state = await webhooks.queue.getJobState(jobId);
    if (state === 'failed' || state === 'completed') await webhooks.queue.remove(jobId);
    else if (state !== 'unknown') continue;
    await webhooks.enqueueAttempt(row.id, attempt, 0);
    requeued++;
  }
  return requeued;
}
