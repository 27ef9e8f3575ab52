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
    const row = await cancelTask({ tasks: deps.repos.tasks, lifecycle: deps.taskLifecycle }, principal.accountId, params.publicId);
    deps.taskReader.remember(principal.accountId, row);
    return { status: 200, jsonText: renderTask(row, await deps.fileLinks.forRows([row]), taskProgress(row, null)) };
  },
});
