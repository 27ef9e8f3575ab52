// Sends one of a task's files; shared by `/api/tasks/...` (API key) and `/api/console/tasks/...` (session).
import path from 'node:path';
import type { Response } from 'express';
import { ApiError } from '../../errors';
import { taskFiles, type TaskRow } from '../../domain/task-view';
import type { ResponseSpec } from '../../http/route';
import { errorSchema } from '../../schemas/errors';
import { FILE_NAME_SCHEMA } from './task-params';

const binary = { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } };

/** The documented responses of a file download (besides errors). */
export const FILE_RESPONSES: Record<number, ResponseSpec> = {
  200: { description: 'The file.', headers: ['Content-Disposition', 'Cache-Control-File', 'Content-Type-File'], content: binary },
  206: { description: 'The requested byte range of the file (`Range` request).', headers: ['Content-Disposition', 'Content-Range'], content: binary },
  304: { description: 'Conditional request (`If-None-Match` / `If-Modified-Since`) and the file is unchanged.', headers: ['ETag'] },
  412: { description: '`If-Match` / `If-Unmodified-Since` precondition failed: `Malformed request.`', schema: errorSchema },
  416: { description: 'The `Range` cannot be satisfied: `Malformed request.`', schema: errorSchema, headers: ['Content-Range'] },
};

/** Streams the file `name` of `row` (404 `Task not found.` / `File not found.`); supports Range and conditional requests. */
export async function sendTaskFile(res: Response, filesDir: string, row: TaskRow | null, name: string): Promise<{ sent: true }> {
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  const file = FILE_NAME_SCHEMA.safeParse(name).success ? taskFiles(row).find((f) => f.name === name) : undefined;
  if (!file) throw new ApiError('FILE_NOT_FOUND');
  // Headers given to sendFile are only set when the file is actually sent.
  const headers = {
    'Content-Type': file.content_type,
    'Cache-Control': 'private, max-age=86400, immutable',
    'Content-Disposition': `inline; filename="${file.name}"`,
  };
  await new Promise<void>((resolve, reject) => {
    res.sendFile(path.join(filesDir, row.public_id, file.name), { dotfiles: 'deny', headers }, (err) => {
      if (!err) resolve();
      else if (res.headersSent) resolve();
      else if ((err as NodeJS.ErrnoException).code === 'ENOENT') reject(new ApiError('FILE_NOT_FOUND'));
      else reject(err);
    });
  });
  return { sent: true };
}
