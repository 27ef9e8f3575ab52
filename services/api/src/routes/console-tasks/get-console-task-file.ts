import { defineRoute } from '../../http/route';
import { taskFileParams } from '../tasks/task-params';
import { FILE_RESPONSES, sendTaskFile } from '../tasks/task-file';

export const getConsoleTaskFileRoute = defineRoute({
  operationId: 'getConsoleTaskFile',
  method: 'get',
  path: '/api/console/tasks/{publicId}/files/{name}',
  tag: 'Console tasks',
  summary: 'Download a file of a task (console)',
  auth: 'session',
  params: taskFileParams,
  responses: FILE_RESPONSES,
  errors: ['FILE_NOT_FOUND', 'FILES_EXPIRED'],
  async handler({ params }, { deps, principal, res }) {
    return sendTaskFile(res, deps.store, await deps.repos.tasks.get(principal.accountId, params.publicId), params.name);
  },
});
