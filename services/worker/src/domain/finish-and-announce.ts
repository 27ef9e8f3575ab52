import {
  e2eSeconds,
  finishTask,
  recordTaskStatus,
  TaskStatus,
  terminalStatusName,
  type FinishTaskInput,
  type FinishedTask,
  type MarkerRedis,
  type TaskErrorCode,
} from '@taskapi/domain';
import type { SqlExecutor } from '@taskapi/db';
import { newId } from '@taskapi/ids';
import type { Logger } from '@taskapi/logger';
import type { WebhookQueue } from '@taskapi/queue';
import type { WorkerMetrics } from '../infra/metrics';

export interface AnnounceDeps {
  db: SqlExecutor;
  redis: MarkerRedis;
  webhooks: WebhookQueue;
  logger: Logger;
  metrics: Pick<WorkerMetrics, 'observeE2e'>;
}

/**
 * Terminal transition (status, refund and webhook outbox row in one statement, then the status
 * marker), then the first delivery attempt's job. If enqueueing fails, the dispatcher's sweeper
 * sends the pending delivery later; the transition itself is already durable.
 * `afterCommit` starts once the transition is committed (or found already made) and runs beside the
 * marker and the webhook job: a run's worker tells the scheduler there, so the freed slot's next
 * task is queued without adding a round trip to the end of every run. Resolves when both are done.
 * Returns null when the task was already terminal (cancelled, or finished by another run).
 */
export async function finishAndAnnounce(
  deps: AnnounceDeps,
  publicId: string,
  input: FinishTaskInput,
  afterCommit?: () => Promise<void>,
): Promise<FinishedTask | null> {
  const finished = await finishTask(deps.db, publicId, null, input, newId('delivery'));
  const alongside = afterCommit?.();
  try {
    if (finished) await announce(deps, publicId, finished, input.status === TaskStatus.failed ? input.errorCode : undefined);
  } finally {
    await alongside;
  }
  return finished;
}

async function announce(deps: AnnounceDeps, publicId: string, finished: FinishedTask, errorCode: TaskErrorCode | undefined): Promise<void> {
  // The marker API replicas validate their cached task rows against, before anyone hears of the change.
  await recordTaskStatus(deps.redis, finished.account_id, finished.public_id, finished.status);
  // Every terminal transition of the worker (run, given-up job, sweeper) passes here exactly once,
  // so failed tasks are counted by error code here too.
  deps.metrics.observeE2e(finished.kind, terminalStatusName(finished.status), e2eSeconds(finished.created_at, finished.finished_at), errorCode);
  if (finished.delivery_id) {
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
}
