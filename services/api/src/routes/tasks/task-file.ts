// Sends one of a task's files; shared by `/api/tasks/...` (API key) and `/api/console/tasks/...` (session).
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { outputKey, type ByteRange, type FileStore } from '@taskapi/file-store';
import { ApiError } from '../../errors';
import { contentDisposition } from '../../domain/file-links';
import { taskFiles } from '../../domain/task-files';
import type { TaskRow } from '../../repositories/tasks';
import type { ResponseSpec } from '../../http/route';
import { errorSchema } from '../../schemas/errors';
import { FILE_NAME_SCHEMA } from './task-params';

const binary = { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } };

/** The documented responses of a file download (besides errors). */
export const FILE_RESPONSES: Record<number, ResponseSpec> = {
  200: { description: 'The file.', headers: ['Content-Disposition', 'Cache-Control-File', 'Content-Type-File'], content: binary },
  206: { description: 'The requested byte range of the file (`Range` request).', headers: ['Content-Disposition', 'Content-Range'], content: binary },
  304: { description: 'Conditional request (`If-None-Match` / `If-Modified-Since`) and the file is unchanged.', headers: ['ETag'] },
  412: {
    description: '`If-Match` / `If-Unmodified-Since` precondition failed: `Malformed request.`',
    schema: errorSchema,
    examples: { MALFORMED_REQUEST: { summary: 'The file does not match `If-Match`', value: { message: 'Malformed request.' } } },
  },
  416: {
    description: 'The `Range` cannot be satisfied: `Malformed request.`',
    schema: errorSchema,
    headers: ['Content-Range'],
    examples: { MALFORMED_REQUEST: { summary: 'A `Range` beyond the end of the file', value: { message: 'Malformed request.' } } },
  },
};

/** Whether an `If-Match` / `If-None-Match` list names `etag` (or is `*`). */
const listNames = (header: string, etag: string) => header.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === etag);

/** Seconds-precision HTTP date comparison: `Last-Modified` carries whole seconds. */
const secondsOf = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * Streams the file `name` of `row` from the file store (404 `Task not found.` / `File not found.`,
 * 410 once retention deleted the task's files, 503 when the store is unreachable). Files never change once written, so the ETag is derived from
 * what identifies them; supports a single `Range` (206/416), `If-Range` and conditional requests.
 */
export async function sendTaskFile(
  res: Response,
  store: FileStore,
  row: TaskRow | null,
  name: string,
  /** `Cache-Control` of the answer; by default a day (files never change). Signed links: no longer than they are valid. */
  cacheControl = 'private, max-age=86400, immutable',
): Promise<{ sent: true }> {
  if (!row) throw new ApiError('TASK_NOT_FOUND');
  // Retention deleted them (docs/operations.md): gone for good, whichever name is asked for.
  if (row.files_expired_at) throw new ApiError('FILES_EXPIRED');
  const file = FILE_NAME_SCHEMA.safeParse(name).success ? taskFiles(row).find((f) => f.name === name) : undefined;
  if (!file) throw new ApiError('FILE_NOT_FOUND');
  const req = res.req;
  const etag = `"${createHash('sha256').update(`${row.public_id}/${file.name}/${file.size}`).digest('base64url').slice(0, 27)}"`;
  const lastModified = row.finished_at ?? row.created_at;

  const ifMatch = req.get('if-match');
  const ifUnmodifiedSince = Date.parse(req.get('if-unmodified-since') ?? '');
  if ((ifMatch && !listNames(ifMatch, etag)) || (!ifMatch && ifUnmodifiedSince && secondsOf(lastModified) > ifUnmodifiedSince / 1000)) {
    throw new ApiError('MALFORMED_REQUEST', { status: 412 });
  }
  res.set({ ETag: etag, 'Last-Modified': lastModified.toUTCString(), 'Accept-Ranges': 'bytes' });
  const ifNoneMatch = req.get('if-none-match');
  const ifModifiedSince = Date.parse(req.get('if-modified-since') ?? '');
  if (ifNoneMatch ? listNames(ifNoneMatch, etag) : ifModifiedSince && secondsOf(lastModified) <= ifModifiedSince / 1000) {
    res.status(304).end();
    return { sent: true };
  }

  let range: ByteRange | undefined;
  const ifRange = req.get('if-range');
  if (req.get('range') && (!ifRange || ifRange === etag)) {
    const ranges = req.range(file.size, { combine: true });
    if (ranges === -1 || (file.size === 0 && ranges !== -2)) {
      res.set('Content-Range', `bytes */${file.size}`);
      throw new ApiError('MALFORMED_REQUEST', { status: 416 });
    }
    // A malformed or multi-part `Range` is ignored: the whole file (as RFC 9110 allows).
    if (Array.isArray(ranges) && ranges.length === 1 && ranges[0]) range = { start: ranges[0].start, end: ranges[0].end };
  }

  const object = await store.get(outputKey(row.public_id, file.name), range);
  if (!object) throw new ApiError('FILE_NOT_FOUND');
  res.status(range ? 206 : 200).set({
    'Content-Type': file.content_type,
    'Content-Length': String(range ? range.end - range.start + 1 : object.size),
    'Cache-Control': cacheControl,
    'Content-Disposition': contentDisposition(file.name),
    ...(range ? { 'Content-Range': `bytes ${range.start}-${range.end}/${object.size}` } : {}),
  });
  if (req.method === 'HEAD') {
    object.body.destroy();
    res.end();
    return { sent: true };
  }
  // A store failing mid-stream can only cut the connection: the status line is already sent.
  await pipeline(object.body, res).catch(() => res.destroy());
  return { sent: true };
}
