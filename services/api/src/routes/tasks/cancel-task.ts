import { e2eSeconds } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';
import { cancelTask } from '../../domain/cancel-task';
import { renderTask, taskProgress } from '../../domain/task-view';
import { defineRoute } from '../../http/route';
import { taskSchema } from '../../schemas/tasks';
import { taskParams } from './task-params';

/** `POST /api/tasks/{publicId}/cancel`: status 40 and a full refund, no webhook. */
export const cancelTaskRoute = defineRoute({
  operationId: 'cancelTask',
  method: 'post',
  path: '/api/tasks/{publicId}/cancel',
  tag: 'Tasks',
  summary: 'Cancel a task',
  description:
    'Cancels a queued (0) or processing (10) task: status 40, the cost refunded in full, and no webhook. A worker that ' +
    'picks the task up afterwards skips it. No request body.',
  auth: 'apiKey',
  params: taskParams,
  responses: { 200: { description: 'The cancelled task (status 40).', schema: taskSchema } },
  errors: ['TASK_ALREADY_FINISHED'],
  async handler({ params }, { deps, principal }) {
    const row = await cancelTask({ tasks: deps.repos.tasks, redis: deps.redis }, principal.accountId, params.publicId);
    deps.taskReader.remember(principal.accountId, row);
    if (row.finished_at) deps.metrics.taskE2e.observe({ kind: row.kind, status: 'cancelled' }, e2eSeconds(row.created_at, row.finished_at));
    // The task gives up its place in its account's line (or its job, if released) at once; one
    // already running sees status 40 when it ends. Best effort: a task the scheduler still holds is
    // skipped by the worker that takes it.
    await deps.scheduler.cancel(row.kind as TaskKind, params.publicId).catch((err: unknown) =>
      deps.logger.warn('could not tell the scheduler a task was cancelled; its worker will skip it', { public_id: params.publicId, error: err }),
    );
    return { status: 200, jsonText: renderTask(row, await deps.fileLinks.forRows([row]), taskProgress(row, null)) };
  },
});
