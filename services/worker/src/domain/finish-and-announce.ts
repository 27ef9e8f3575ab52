import { e2eSeconds, finishTaskAndRecord, terminalStatusName, type FinishTaskInput, type FinishedTask, type MarkerRedis, type Queryable } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import type { Logger } from '@taskapi/logger';
import type { WebhookQueue } from '@taskapi/queue';
import type { WorkerMetrics } from '../infra/metrics';

export interface AnnounceDeps {
  db: Queryable;
  redis: MarkerRedis;
  webhooks: WebhookQueue;
  logger: Logger;
  metrics: Pick<WorkerMetrics, 'observeE2e'>;
}

/**
 * Terminal transition (status, refund and webhook outbox row in one statement, then the status
 * marker), then the first delivery attempt's job. If enqueueing fails, the dispatcher's sweeper
 * sends the pending delivery later; the transition itself is already durable.
 * Returns null when the task was already terminal (cancelled, or finished by another run).
 */
export async function finishAndAnnounce(deps: AnnounceDeps, publicId: string, input: FinishTaskInput): Promise<FinishedTask | null> {
  const finished = await finishTaskAndRecord(deps.db, deps.redis, publicId, null, input, newId('delivery'));
  // Every terminal transition of the worker (run, given-up job, sweeper) passes here exactly once.
  if (finished) deps.metrics.observeE2e(finished.kind, terminalStatusName(finished.status), e2eSeconds(finished.created_at, finished.finished_at));
  if (finished?.delivery_id) {
    try {
      await deps.webhooks.enqueueAttempt(finished.delivery_id, 1, 0, finished.account_id);
    } catch (err) {
      deps.logger.warn('webhook job not enqueued; the sweeper will send it', {
        public_id: publicId,
        delivery_id: finished.delivery_id,
        error: (err as Error).message,
      });
    }
  }
  return finished;
}
