import type pg from 'pg';
import { finishTaskAndRecord, TaskStatus, type MarkerRedis } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { ApiError } from '../errors';
import { getTask } from './task-queries';
import type { TaskRow } from './task-view';

/**
 * Cancels a queued or processing task: status 40 and a full refund in one statement, no webhook.
 * Two racing cancels: one wins, the other sees a terminal task (409); the refund happens once.
 */
export async function cancelTask(deps: { pool: pg.Pool; redis: MarkerRedis }, accountId: string, publicId: string): Promise<TaskRow> {
  const finished = await finishTaskAndRecord(deps.pool, deps.redis, publicId, accountId, { status: TaskStatus.cancelled }, newId('delivery'));
  const row = await getTask(deps.pool, accountId, publicId);
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  if (!finished) throw new ApiError('TASK_ALREADY_FINISHED');
  return row;
}
