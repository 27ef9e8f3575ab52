import { z } from 'zod';
import { ApiError } from '../../errors';
import { cacheControlFor } from '../../domain/file-links';
import { defineRoute } from '../../http/route';
import { taskFileParams } from './task-params';
import { FILE_RESPONSES, sendTaskFile } from './task-file';

const signedLinkQuery = z.object({
  expires: z
    .string({ error: 'must be given once' })
    .optional()
    .meta({ description: 'Unix time (seconds) until which the link works.', example: '1795000000' }),
  signature: z
    .string({ error: 'must be given once' })
    .optional()
    .meta({ description: 'HMAC-SHA256 (base64url) of the task, the file name and `expires`, keyed from `SECRETS_KEY`.' }),
});

/**
 * `GET /api/files/{publicId}/{name}?expires=…&signature=…`: the `files[].url` of the task API with
 * `STORAGE_DRIVER=fs`. The link itself is the credential (no API key), bound to the task, the file
 * name and the expiry, so a browser can load it directly.
 */
export const getSignedTaskFileRoute = defineRoute({
  operationId: 'getSignedTaskFile',
  method: 'get',
  path: '/api/files/{publicId}/{name}',
  tag: 'Tasks',
  summary: 'Download a file through its signed link',
  description:
    "What a task's `files[].url` points at with the `fs` file store (with `s3` it is a presigned URL of the bucket instead). " +
    'Needs no API key; valid for `FILE_URL_TTL_SECONDS` (default 3600) after the task was read. An altered or expired link, or one ' +
    'moved to another file name, answers 403. `Cache-Control` never outlives the link. Supports `Range` and conditional requests.',
  auth: 'none',
  params: taskFileParams,
  query: signedLinkQuery,
  responses: FILE_RESPONSES,
  errors: ['FILE_LINK_INVALID', 'TASK_NOT_FOUND', 'FILE_NOT_FOUND', 'FILES_EXPIRED', 'SERVICE_UNAVAILABLE'],
  async handler({ params, query }, { deps, res }) {
    const remaining = deps.fileLinks.verify(params.publicId, params.name, query.expires, query.signature);
    if (remaining === null) throw new ApiError('FILE_LINK_INVALID');
    return sendTaskFile(res, deps.store, await deps.repos.tasks.getByPublicId(params.publicId), params.name, cacheControlFor(remaining));
  },
});
