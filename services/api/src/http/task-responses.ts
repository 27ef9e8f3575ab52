// The HTTP edge shared by the two ways to read tasks: `/api/tasks` (API key) and
// `/api/console/tasks` (login session). Same query rules, same JSON, same file serving.
import path from 'node:path';
import type { Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { TASK_KINDS, TASK_STATUSES } from '@taskapi/domain';
import { isId } from '@taskapi/ids';
import { listTasks } from '../domain/task-queries';
import { renderTask, taskFiles, type TaskRow } from '../domain/task-view';
import { ApiError } from '../errors';
import { locals } from './request-context';
import { parseOrThrow } from './validation';

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const listQuerySchema = z.strictObject({
  status: z
    .string({ error: 'must be given once' })
    .transform((s, ctx) => {
      const values = s.split(',').map((v) => Number(v.trim()));
      if (values.some((v) => !(TASK_STATUSES as readonly number[]).includes(v))) {
        ctx.addIssue({ code: 'custom', message: `must be one or more of ${TASK_STATUSES.join(', ')}, comma-separated` });
        return z.NEVER;
      }
      return [...new Set(values)];
    })
    .optional(),
  kind: z.enum(TASK_KINDS, { error: `must be one of ${TASK_KINDS.join(', ')}` }).optional(),
  limit: z
    .string({ error: 'must be given once' })
    .regex(/^\d{1,3}$/, { error: 'must be an integer from 1 to 100' })
    .transform(Number)
    .pipe(z.number().min(1, { error: 'must be an integer from 1 to 100' }).max(100, { error: 'must be an integer from 1 to 100' }))
    .optional(),
  cursor: z
    .string({ error: 'must be given once' })
    .refine((c) => isId('task', c), { error: 'must be a next_cursor value from a previous page' })
    .optional(),
});

/** Sends JSON that is already text (task JSON is built as text to echo `payload` exactly). */
export function sendJson(res: Response, status: number, body: string): void {
  res.status(status).type('application/json').send(body);
}

/** The `publicId` path parameter; hostile or malformed ids never reach the database. */
export function taskIdParam(res: Response, value: string | undefined): string {
  if (!value || !isId('task', value)) throw new ApiError('TASK_NOT_FOUND');
  locals(res).publicId = value;
  return value;
}

/** `GET …/tasks/{publicId}`: the task JSON, or 404 `Task not found.` */
export function sendTask(res: Response, row: TaskRow | null, base: string, filesRoot?: string): void {
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  sendJson(res, 200, renderTask(row, base, filesRoot));
}

/**
 * `GET …/tasks` for one account: parses `status`, `kind`, `limit`, `cursor` from `query` and sends
 * `{"data":[task...],"next_cursor"}`, newest first. `filesRoot` is where the task files' URLs point.
 */
export async function sendTaskList(
  res: Response,
  pool: pg.Pool,
  accountId: string,
  query: unknown,
  base: string,
  filesRoot?: string,
): Promise<void> {
  const q = parseOrThrow(listQuerySchema, query, 'Query');
  const { rows, nextCursor } = await listTasks(pool, accountId, { statuses: q.status, kind: q.kind, limit: q.limit ?? 20, cursor: q.cursor });
  sendJson(res, 200, `{"data":[${rows.map((r) => renderTask(r, base, filesRoot)).join(',')}],"next_cursor":${JSON.stringify(nextCursor)}}`);
}

/** Sends one of the task's files (`name` from its `files`), or 404 `Task not found.` / `File not found.` */
export async function sendTaskFile(res: Response, filesDir: string, row: TaskRow | null, name: string | undefined): Promise<void> {
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  const file = name && FILE_NAME.test(name) ? taskFiles(row).find((f) => f.name === name) : undefined;
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
}
