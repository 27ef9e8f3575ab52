import { noteCancelledPrediction, parseProgress, TaskStatus, taskProgressKey, type MarkerRedis, type OrphanRedis } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import type { RedisClient } from '@taskapi/service';
import { ApiError } from '../errors';
import type { TaskRepository, TaskRow } from '../repositories/tasks';

/**
 * Cancels a queued or processing task: status 40 and a full refund in one statement, no webhook.
 * The progress it had reached (its Redis key, while it ran) is kept as the task's. Two racing
 * cancels: one wins, the other sees a terminal task (409); the refund happens once. A prediction
 * the task left on a model server is noted for a worker to cancel (docs/models.md).
 */
export async function cancelTask(deps: { tasks: TaskRepository; redis: MarkerRedis & OrphanRedis & Pick<RedisClient, 'get'> }, accountId: string, publicId: string): Promise<TaskRow> {
  const progress = parseProgress(await deps.redis.get(taskProgressKey(accountId, publicId)));
  const finished = await deps.tasks.finish(deps.redis, accountId, publicId, { status: TaskStatus.cancelled, progress }, newId('delivery'));
  const row = await deps.tasks.get(accountId, publicId);
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  if (!finished) throw new ApiError('TASK_ALREADY_FINISHED');
  // After the answer's facts are settled; a Redis failure here only leaves the prediction to run out.
  await noteCancelledPrediction(deps.redis, publicId).catch(() => undefined);
  return row;
}
