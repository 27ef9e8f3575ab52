import { defineRoute } from '../../http/route';
import { taskListSchema } from '../../schemas/tasks';
import { listTasksQuerySchema, renderTaskList, TASK_LIST_INVALID_EXAMPLES } from '../tasks/task-list';

/** Where the console's task JSON points file URLs: the session can fetch them there. */
export const CONSOLE_TASKS_ROOT = '/api/console/tasks';

export const listConsoleTasksRoute = defineRoute({
  operationId: 'listConsoleTasks',
  method: 'get',
  path: '/api/console/tasks',
  tag: 'Console tasks',
  summary: "List the account's tasks (console)",
  description: 'The same list as `GET /api/tasks`, with a login session; file URLs point at `/api/console/tasks/...`.',
  auth: 'session',
  query: listTasksQuerySchema,
  responses: { 200: { description: 'One page of tasks.', schema: taskListSchema } },
  errors: ['UNKNOWN_CURSOR'],
  invalidExamples: TASK_LIST_INVALID_EXAMPLES,
  async handler({ query }, { deps, principal }) {
    return { status: 200, jsonText: await renderTaskList(deps, principal.accountId, query, CONSOLE_TASKS_ROOT) };
  },
});
