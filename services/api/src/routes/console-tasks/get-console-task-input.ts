import { pipeline } from 'node:stream/promises';
import { inputKey } from '@taskapi/file-store';
import { ApiError } from '../../errors';
import { defineRoute } from '../../http/route';
import { taskParams } from '../tasks/task-params';

/** The types `image_base64` accepts (task-input.ts): nothing else is ever served from here. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg']);

/** `input.image_upload` of a face-detection task created with `image_base64`, if this is one. */
function uploadedType(inputText: string): string | null {
  const input = JSON.parse(inputText) as { image_upload?: { content_type?: unknown } };
  const type = input.image_upload?.content_type;
  return typeof type === 'string' && IMAGE_TYPES.has(type) ? type : null;
}

/**
 * The image a face-detection task was given as `image_base64`, so the console can draw the result's
 * boxes over it. An `image_url` input is not fetched on the user's behalf: the console loads
 * nothing from other sites.
 */
export const getConsoleTaskInputRoute = defineRoute({
  operationId: 'getConsoleTaskInput',
  method: 'get',
  path: '/api/console/tasks/{publicId}/input',
  tag: 'Console tasks',
  summary: 'Download the uploaded input image of a task (console)',
  description:
    'The image sent as `image_base64` to a face-detection task. A task without an uploaded image (`image_url`, or another ' +
    'kind) answers 404 `File not found.`; once retention has deleted the task\'s files, 410.',
  auth: 'session',
  params: taskParams,
  responses: {
    200: {
      description: 'The image.',
      headers: ['Cache-Control-File', 'Content-Type-File'],
      content: { 'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } }, 'image/jpeg': { schema: { type: 'string', contentMediaType: 'image/jpeg' } } },
    },
  },
  errors: ['FILE_NOT_FOUND', 'FILES_EXPIRED'],
  async handler({ params }, { deps, principal, res }) {
    const row = await deps.repos.tasks.get(principal.accountId, params.publicId);
    if (!row) throw new ApiError('TASK_NOT_FOUND');
    const type = uploadedType(row.input);
    if (!type) throw new ApiError('FILE_NOT_FOUND');
    if (row.files_expired_at) throw new ApiError('FILES_EXPIRED');
    const object = await deps.store.get(inputKey(row.public_id));
    if (!object) throw new ApiError('FILE_NOT_FOUND');
    res.status(200).set({
      'Content-Type': type,
      'Content-Length': String(object.size),
      // The input never changes once the task exists.
      'Cache-Control': 'private, max-age=86400, immutable',
    });
    if (res.req.method === 'HEAD') {
      object.body.destroy();
      res.end();
      return { sent: true };
    }
    // A store failing mid-stream can only cut the connection: the status line is already sent.
    await pipeline(object.body, res).catch(() => res.destroy());
    return { sent: true };
  },
});
