import type { Queryable } from '@taskapi/domain';
import { deliveryJobId, jobOutcome, type WebhookQueue } from '@taskapi/queue';

const BATCH = 1000;

interface PendingDeliveryRow {
  id: string;
  account_id: string;
  attempt_count: number;
  /** Whether attempt `attempt_count` was claimed and its result is not recorded yet. */
  last_attempt_in_flight: boolean;
  next_attempt_at: Date;
}

/**
 * Every pending delivery whose next attempt is overdue by more than `graceMs` must have its job:
 * Redis lost it (restart without persistence, FLUSHALL), or a process died between commit and
 * enqueue. The job is added again under its deterministic id; a job BullMQ already finished
 * without recording the attempt is run again, with its data (a result it still has to record).
 * The job due is the next attempt's, or, when the last attempt is still in flight, that attempt's:
 * only its own job records it, so that its number is never sent twice.
 * @returns how many deliveries were re-enqueued.
 */
export async function sweepDeliveries(db: Queryable, webhooks: WebhookQueue, graceMs: number, batchSize = BATCH): Promise<number> {
  let requeued = 0;
  // Keyset pages over every overdue delivery: a page of live jobs must not hide missing ones.
  let after: { due: Date; id: string } | null = null;
  for (;;) {
    const page = await db.query<PendingDeliveryRow>({
      name: 'dispatcher-sweep-deliveries',
      text: `SELECT d.id, d.account_id, d.attempt_count, d.next_attempt_at, COALESCE(w.in_flight, false) AS last_attempt_in_flight
               FROM webhook_deliveries d
               LEFT JOIN webhook_attempts w ON w.delivery_id = d.id AND w.attempt_number = d.attempt_count
              WHERE d.state = 'pending' AND d.next_attempt_at < now() - make_interval(secs => $1::float8 / 1000)
                AND ($2::timestamptz IS NULL OR (d.next_attempt_at, d.id) > ($2::timestamptz, $3::text))
              ORDER BY d.next_attempt_at, d.id LIMIT $4`,
      values: [graceMs, after?.due ?? null, after?.id ?? null, batchSize],
    });
    const rows: PendingDeliveryRow[] = page.rows;
    const attempts = rows.map((row) => (row.last_attempt_in_flight ? row.attempt_count : row.attempt_count + 1));
    // A page's lookups at once (auto-pipelined), each constant work in Redis (see jobOutcome).
    const outcomes = await Promise.all(rows.map((row, i) => jobOutcome(webhooks.queue, deliveryJobId(row.id, attempts[i]!))));
    for (const [i, row] of rows.entries()) {
      const attempt = attempts[i]!;
      const found = outcomes[i]!;
      if (found.outcome === 'failed' || found.outcome === 'completed') {
        await found.job.retry(found.outcome, { resetAttemptsMade: true, resetAttemptsStarted: true });
      } else if (found.outcome === 'missing') await webhooks.enqueueAttempt(row.id, attempt, 0, row.account_id);
      else continue;
      requeued++;
    }
    const last: PendingDeliveryRow | undefined = rows[rows.length - 1];
    if (!last || rows.length < batchSize) return requeued;
    after = { due: last.next_attempt_at, id: last.id };
  }
}
