import { ApiError } from '../../errors';
import { defineRoute } from '../../http/route';
import { taskFileParams } from './task-params';
import { FILE_RESPONSES, sendTaskFile } from './task-file';

/** `GET /api/tasks/{publicId}/files/{name}`: one of the task's files. */
export const getTaskFileRoute = defineRoute({
  operationId: 'getTaskFile',
  method: 'get',
  path: '/api/tasks/{publicId}/files/{name}',
  tag: 'Tasks',
  summary: 'Download a file of a task',
  description: "The bytes of one of the task's `files`, with its `content_type`. Supports `Range` and conditional requests (`ETag`, `Last-Modified`).",
  auth: 'apiKey',
  params: taskFileParams,
  responses: FILE_RESPONSES,
  errors: ['FILE_NOT_FOUND', 'FILES_EXPIRED'],
  async handler({ params }, { deps, principal, prefetched, res }) {
    const row = (await deps.taskReader.read(principal, params.publicId, prefetched))?.row ?? null;
    try {
      return await sendTaskFile(res, deps.store, row, params.name);
    } catch (err) {
      // A cached row can predate the retention job: a file gone from the store is 410 when a fresh read says the files expired.
      if (!(err instanceof ApiError && err.code === 'FILE_NOT_FOUND') || !row) throw err;
      const fresh = await deps.repos.tasks.get(principal.accountId, params.publicId);
      if (!fresh?.files_expired_at) throw err;
      deps.taskReader.remember(principal.accountId, fresh);
      throw new ApiError('FILES_EXPIRED');
    }
  },
});
