import type { TaskLifecycle } from '@taskapi/task-lifecycle';
import { ApiError } from '../errors';
import type { TaskRepository, TaskRow } from '../repositories/tasks';

/**
 * Cancels a queued or processing task through its lifecycle: status 40 and a full refund in one
 * statement, no webhook, the progress it had reached kept, its place in the scheduler freed, a
 * running engine stopped, a prediction it left noted for a worker to cancel. Two racing cancels:
 * one wins, the other sees a terminal task (409); the refund happens once.
 */
export async function cancelTask(deps: { tasks: TaskRepository; lifecycle: TaskLifecycle }, accountId: string, publicId: string): Promise<TaskRow> {
  const finished = await deps.lifecycle.cancels.cancel(accountId, publicId);
  const row = await deps.tasks.get(accountId, publicId);
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  if (!finished) throw new ApiError('TASK_ALREADY_FINISHED');
  return row;
}
