import { renderTask } from '../../domain/task-view';
import { defineRoute } from '../../http/route';
import { taskSchema } from '../../schemas/tasks';
import { ApiError } from '../../errors';
import { taskParams } from './task-params';

/** `GET /api/tasks/{publicId}`: what integrators poll; served through the read cache. */
export const getTaskRoute = defineRoute({
  operationId: 'getTask',
  method: 'get',
  path: '/api/tasks/{publicId}',
  tag: 'Tasks',
  summary: 'Get a task',
  description: 'The task with its `result` and `files` once completed.',
  auth: 'apiKey',
  params: taskParams,
  responses: { 200: { description: 'The task.', schema: taskSchema } },
  async handler({ params }, { deps, principal, prefetched }) {
    const row = await deps.taskReader.read(principal, params.publicId, prefetched);
    if (!row) throw new ApiError('TASK_NOT_FOUND');
    return { status: 200, jsonText: renderTask(row, await deps.fileLinks.forRows([row])) };
  },
});
