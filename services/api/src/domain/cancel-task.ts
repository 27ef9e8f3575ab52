import { TaskStatus, type MarkerRedis } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { ApiError } from '../errors';
import type { TaskRepository, TaskRow } from '../repositories/tasks';

/**
 * Cancels a queued or processing task: status 40 and a full refund in one statement, no webhook.
 * Two racing cancels: one wins, the other sees a terminal task (409); the refund happens once.
 */
export async function cancelTask(deps: { tasks: TaskRepository; redis: MarkerRedis }, accountId: string, publicId: string): Promise<TaskRow> {
  const finished = await deps.tasks.finish(deps.redis, accountId, publicId, { status: TaskStatus.cancelled }, newId('delivery'));
  const row = await deps.tasks.get(accountId, publicId);
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  if (!finished) throw new ApiError('TASK_ALREADY_FINISHED');
  return row;
}
