import type { Queryable } from '@taskapi/domain';
import { deliveryJobId, type WebhookQueue } from '@taskapi/queue';

const BATCH = 1000;

interface PendingDeliveryRow {
  id: string;
  attempt_count: number;
  next_attempt_at: Date;
}

/**
 * Every pending delivery whose next attempt is overdue by more than `graceMs` must have its job:
 * Redis lost it (restart without persistence, FLUSHALL), or a process died between commit and
 * enqueue. The job is added again under its deterministic id; a job BullMQ already finished
 * without recording the attempt is replaced.
 * @returns how many deliveries were re-enqueued.
 */
export async function sweepDeliveries(db: Queryable, webhooks: WebhookQueue, graceMs: number, batchSize = BATCH): Promise<number> {
  let requeued = 0;
  // Keyset pages over every overdue delivery: a page of live jobs must not hide missing ones.
  let after: { due: Date; id: string } | null = null;
  for (;;) {
    const page = await db.query<PendingDeliveryRow>({
      name: 'dispatcher-sweep-deliveries',
      text: `SELECT id, attempt_count, next_attempt_at FROM webhook_deliveries
              WHERE state = 'pending' AND next_attempt_at < now() - make_interval(secs => $1::float8 / 1000)
                AND ($2::timestamptz IS NULL OR (next_attempt_at, id) > ($2::timestamptz, $3::text))
              ORDER BY next_attempt_at, id LIMIT $4`,
      values: [graceMs, after?.due ?? null, after?.id ?? null, batchSize],
    });
    const rows: PendingDeliveryRow[] = page.rows;
    for (const row of rows) {
      const attempt = row.attempt_count + 1;
      const jobId = deliveryJobId(row.id, attempt);
      const state = await webhooks.queue.getJobState(jobId);
      if (state === 'failed' || state === 'completed') await webhooks.queue.remove(jobId);
      else if (state !== 'unknown') continue;
      await webhooks.enqueueAttempt(row.id, attempt, 0);
      requeued++;
    }
    const last: PendingDeliveryRow | undefined = rows[rows.length - 1];
    if (!last || rows.length < batchSize) return requeued;
    after = { due: last.next_attempt_at, id: last.id };
  }
}
