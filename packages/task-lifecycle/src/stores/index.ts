import type { Logger } from '@taskapi/logger';
import type { TaskQueues, WebhookQueue } from '@taskapi/queue';
import type { TaskScheduler } from '@taskapi/scheduler';
import type { TaskErrorCode } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';
import type { StatusMarkers } from './status-markers';
import type { FinishedTask, TaskRows } from './task-rows';

/**
 * A model prediction a task left behind when it ended without a run following it (cancelled,
 * expired, skipped, given up): cancelled on its model server, or noted for a worker that can
 * reach the server, and forgotten.
 */
export interface PredictionCleanup {
  abandon(kind: TaskKind, publicId: string): Promise<void>;
}

/** No model servers here: nothing to clean up. */
export const NO_PREDICTIONS: PredictionCleanup = { abandon: async () => undefined };

/** Every store a task's state lives in, by STORE_ORDER's names. */
export interface LifecycleStores {
  database: TaskRows;
  markers: StatusMarkers;
  /** The fair scheduler, with the kinds' BullMQ queues its releases go to. */
  scheduler: TaskScheduler;
  queues: TaskQueues;
  webhooks: Pick<WebhookQueue, 'enqueueAttempt'>;
  predictions: PredictionCleanup;
}

/** What the lifecycle needs besides its stores. */
export interface LifecycleResources {
  stores: LifecycleStores;
  logger: Logger;
  /** Told of every terminal transition this process committed (the e2e histogram, failures by code). */
  onFinished?: (task: FinishedTask, errorCode: TaskErrorCode | undefined) => void;
}

export { StatusMarkers } from './status-markers';
export { TaskRows } from './task-rows';
export type { CancelFilter, ClaimedTask, EndedTask, FinishedTask, FinishTaskInput, PendingTaskRow } from './task-rows';
