import type pg from 'pg';
import { finishTaskAndRecord, TaskStatus, type MarkerRedis } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { HttpError } from '../http/errors';
import { getTask } from './task-queries';
import type { TaskRow } from './task-view';

export const TASK_NOT_FOUND = 'Task not found.';
export const TASK_ALREADY_FINISHED = 'Task is already finished.';

/**
 * Cancels a queued or processing task: status 40 and a full refund in one statement, no webhook.
 * Two racing cancels: one wins, the other sees a terminal task (409); the refund happens once.
 */
export async function cancelTask(deps: { pool: pg.Pool; redis: MarkerRedis }, accountId: string, publicId: string): Promise<TaskRow> {
  const finished = await finishTaskAndRecord(deps.pool, deps.redis, publicId, accountId, { status: TaskStatus.cancelled }, newId('delivery'));
  const row = await getTask(deps.pool, accountId, publicId);
  if (!row) throw new HttpError(404, TASK_NOT_FOUND);
  if (!finished) throw new HttpError(409, TASK_ALREADY_FINISHED);
  return row;
}
