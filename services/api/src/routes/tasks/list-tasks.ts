import { defineRoute } from '../../http/route';
import { taskListSchema } from '../../schemas/tasks';
import { listTasksQuerySchema, renderTaskList, TASK_LIST_INVALID_EXAMPLES } from './task-list';

/** `GET /api/tasks`: the account's tasks, newest first, keyset-paginated. */
export const listTasksRoute = defineRoute({
  operationId: 'listTasks',
  method: 'get',
  path: '/api/tasks',
  tag: 'Tasks',
  summary: "List the account's tasks",
  description:
    "Every task of the key's account (whichever key created it), newest first, keyset-paginated: follow `next_cursor` " +
    'until it is `null`. Unknown query parameters and repeated parameters are rejected.',
  auth: 'apiKey',
  query: listTasksQuerySchema,
  responses: { 200: { description: 'One page of tasks.', schema: taskListSchema } },
  errors: ['UNKNOWN_CURSOR'],
  invalidExamples: TASK_LIST_INVALID_EXAMPLES,
  async handler({ query }, { deps, principal }) {
    return { status: 200, jsonText: await renderTaskList(deps, principal.accountId, query) };
  },
});
