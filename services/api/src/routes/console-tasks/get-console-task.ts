import { ApiError } from '../../errors';
import { renderTask, routeFileUrls } from '../../domain/task-view';
import { defineRoute } from '../../http/route';
import { taskSchema } from '../../schemas/tasks';
import { taskParams } from '../tasks/task-params';
import { CONSOLE_TASKS_ROOT } from './list-console-tasks';

// Straight from PostgreSQL: console reads are rare, and the read cache is validated by markers
// that only the key-authenticated path fetches.
export const getConsoleTaskRoute = defineRoute({
  operationId: 'getConsoleTask',
  method: 'get',
  path: '/api/console/tasks/{publicId}',
  tag: 'Console tasks',
  summary: 'Get a task (console)',
  auth: 'session',
  params: taskParams,
  responses: { 200: { description: 'The task.', schema: taskSchema } },
  async handler({ params }, { deps, principal }) {
    const row = await deps.repos.tasks.get(principal.accountId, params.publicId);
    if (!row) throw new ApiError('TASK_NOT_FOUND');
    const [task] = await deps.taskReader.withProgress(principal.accountId, [row]);
    // The console's file links use its own session-authenticated route.
    return { status: 200, jsonText: renderTask(row, routeFileUrls(deps.config.publicBaseUrl, CONSOLE_TASKS_ROOT), task!.progress, task!.queue) };
  },
});
