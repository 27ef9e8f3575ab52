import type { SqlExecutor } from '@taskapi/db';
import { deliveryJobId, jobOutcome, type WebhookQueue } from '@taskapi/queue';
import { overdueDeliveriesPage, type OverdueDelivery } from '../repositories/deliveries';

const BATCH = 1000;

/**
 * Every pending delivery whose next attempt is overdue by more than `graceMs` must have its job:
 * Redis lost it (restart without persistence, FLUSHALL), or a process died between commit and
 * enqueue. The job is added again under its deterministic id; a job BullMQ already finished
 * without recording the attempt is run again, with its data (a result it still has to record).
 * The job due is the next attempt's, or, when the last attempt is still in flight, that attempt's:
 * only its own job records it, so that its number is never sent twice.
 * @returns how many deliveries were re-enqueued.
 */
export async function sweepDeliveries(db: SqlExecutor, webhooks: WebhookQueue, graceMs: number, batchSize = BATCH): Promise<number> {
  let requeued = 0;
  // Keyset pages over every overdue delivery: a page of live jobs must not hide missing ones.
  let after: { due: Date; id: string } | null = null;
  for (;;) {
    const rows = await overdueDeliveriesPage(db, graceMs, after, batchSize);
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
    const last: OverdueDelivery | undefined = rows[rows.length - 1];
    if (!last || rows.length < batchSize) return requeued;
    after = { due: last.next_attempt_at, id: last.id };
  }
}
