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
  errors: ['FILE_NOT_FOUND'],
  async handler({ params }, { deps, principal, prefetched, res }) {
    return sendTaskFile(res, deps.store, await deps.taskReader.read(principal, params.publicId, prefetched), params.name);
  },
});
