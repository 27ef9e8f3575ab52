import type { Database } from '@taskapi/db';
import type { FileStore } from '@taskapi/file-store';
import type { Logger } from '@taskapi/logger';
import { runPeriodically, type Periodic, type RedisClient } from '@taskapi/service';
import { expireTaskFiles } from '../domain/expire-task-files';
import { sweepPredictionBodies } from '../domain/sweep-prediction-bodies';
import type { WorkerMetrics } from './metrics';

/** Retention runs hourly: files are kept for days, so an hour late is nothing. */
export const RETENTION_INTERVAL_MS = 3_600_000;

/**
 * The retention job of every worker replica (expired tasks' files, then model webhook bodies no
 * prediction record lists): one of them per interval runs it, through the same
 * Redis lock as the sweepers (`taskapi:sweeper:*`); a run interrupted on one replica is finished by
 * the next run (the job is idempotent).
 */
export function startRetentionJob(
  deps: { db: Database; redis: RedisClient; store: FileStore; logger: Logger; metrics: Pick<WorkerMetrics, 'countExpired'> },
  retentionDays: number,
  intervalMs = RETENTION_INTERVAL_MS,
): Periodic {
  const { logger, metrics } = deps;
  const stopping = new AbortController();
  const periodic = runPeriodically({
    name: 'retention job',
    intervalMs,
    logger,
    redis: deps.redis,
    lockKey: 'taskapi:sweeper:retention',
    task: async () => {
      await expireTaskFiles(
        {
          db: deps.db.pool,
          store: deps.store,
          onBatch: (batch) => {
            metrics.countExpired(batch.tasks, batch.files);
            logger.info('retention: deleted the stored files of expired tasks', { retention_days: retentionDays, tasks: batch.tasks, files: batch.files });
          },
          onSkipped: (publicIds, err) =>
            logger.warn('retention: could not delete the stored files of a task; left for the next run', { public_ids: publicIds, error: (err as Error).message }),
          signal: stopping.signal,
        },
        retentionDays,
      );
      const bodies = await sweepPredictionBodies({ store: deps.store, redis: deps.redis });
      if (bodies > 0) logger.info('retention: deleted model webhook bodies no prediction record lists', { bodies });
    },
  });
  return {
    ...periodic,
    // A run over a backlog ends after the batch in hand, so the worker's shutdown stays within its budget.
    stop: () => {
      stopping.abort();
      return periodic.stop();
    },
  };
}
