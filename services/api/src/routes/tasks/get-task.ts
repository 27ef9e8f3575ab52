import { z } from 'zod';
import { renderTask } from '../../domain/task-view';
import { defineRoute } from '../../http/route';
import { taskSchema } from '../../schemas/tasks';
import { ApiError } from '../../errors';
import { taskParams } from './task-params';
import { applyPreferWait, preferHeader } from './prefer-wait';

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
  headers: {
    schema: z.object({ prefer: preferHeader.schema }),
    invalid: 'MALFORMED_REQUEST',
    describe: { prefer: preferHeader.description },
  },
  responses: { 200: { description: 'The task.', schema: taskSchema, headers: ['Preference-Applied'] } },
  async handler({ params, headers }, { deps, principal, prefetched, res }) {
    const waited = await applyPreferWait(deps, headers.prefer, principal.accountId, params.publicId, res);
    if (waited?.gone) return { sent: true };
    const task = waited ? waited.task : await deps.taskReader.read(principal, params.publicId, prefetched);
    if (!task) throw new ApiError('TASK_NOT_FOUND');
    return { status: 200, jsonText: renderTask(task.row, await deps.fileLinks.forRows([task.row]), task.progress, task.queue), headers: waited?.headers };
  },
});
