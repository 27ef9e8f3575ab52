import type { Cluster, Redis } from 'ioredis';
import type { Config } from '@taskapi/config';
import type { TaskQueues } from '@taskapi/queue';
import type { Logger } from '@taskapi/logger';
import { FairScheduler } from './fair-scheduler';
import { FifoForBench } from './fifo-for-bench';
import type { TaskScheduler } from './task-scheduler';

export { FairScheduler, MAX_ACCOUNT_CAP, SCHEDULER_PREFIX } from './fair-scheduler';
export type { FairSchedulerOptions } from './fair-scheduler';
export { FifoForBench } from './fifo-for-bench';
export type { AccountLoad, AccountQueue, GroupLoad, IdleSlots, KindLoad, NewTask, RunRelease, SchedulerRecord, TaskPosition, TaskRunRef, TaskScheduler, WaitingTask, WorkerReport } from './task-scheduler';

/**
 * The scheduler every service uses, as configured: the fair scheduler (first-in-first-out only
 * under the bench's `BENCH_FIFO_SCHEDULING`).
 */
export function createTaskScheduler(
  config: Pick<Config, 'accountMaxRunning' | 'benchFifoScheduling'>,
  redis: Redis | Cluster,
  queues: Pick<TaskQueues, 'addRuns' | 'removeRun'>,
  logger: Pick<Logger, 'warn'>,
): TaskScheduler {
  if (config.benchFifoScheduling) return new FifoForBench(queues);
  return new FairScheduler(redis, queues, {
    defaultCap: config.accountMaxRunning,
    onSkipped: (ids) => logger.warn('scheduling entries skipped (corrupt, or contradicting their record); the sweeper restores their tasks if still pending', { public_ids: ids }),
    onQueueError: (err) => logger.warn('released task jobs not added; the sweeper will add them', { error: err.message }),
  });
}
