import path from 'node:path';
import express, { Router, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { TASK_KINDS, TASK_STATUSES, type TaskKind } from '@taskapi/domain';
import { isId } from '@taskapi/ids';
import { taskJobId } from '@taskapi/queue';
import type { ApiDeps } from '../deps';
import { apiKeyAuth } from '../http/api-key-auth';
import { HttpError, badRequest } from '../http/errors';
import { baseUrl, keyPrincipal, locals } from '../http/request-context';
import { parseOrThrow } from '../http/validation';
import { cancelTask, TASK_NOT_FOUND } from '../domain/cancel-task';
import { requestFingerprint, type IdempotencyRequest } from '../domain/create-task';
import { createTaskSchemas, draftTask, MAX_IMAGE_BYTES } from '../domain/task-input';
import { listTasks } from '../domain/task-queries';
import { renderTask, taskFiles } from '../domain/task-view';

export const FILE_NOT_FOUND = 'File not found.';
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

// Base64 of the largest image plus room for the other fields.
const FACE_BODY_LIMIT = Math.ceil((MAX_IMAGE_BYTES * 4) / 3) + 256 * 1024;
const BODY_LIMIT = 1024 * 1024;

/**
 * JSON body parsing for task creation, after authentication (so nobody uploads 12 MB unauthenticated).
 * Keeps the raw text so `payload` can be echoed exactly as sent.
 */
function jsonBody(limit: number): RequestHandler {
  const parse = express.json({
    limit,
    strict: true,
    verify: (_req, res, buf, encoding) => {
      locals(res as Response).rawBody = buf.toString((encoding || 'utf8') as BufferEncoding);
    },
  });
  return (req, res, next) => {
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    if (hasBody && !req.is('application/json')) {
      next(new HttpError(415, 'Content-Type must be application/json.'));
      return;
    }
    parse(req, res, next);
  };
}

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

function sendJson(res: Response, status: number, body: string): void {
  res.status(status).type('application/json').send(body);
}

/** The `/api/tasks` router: every request authenticated by API key and rate limited. */
export function taskRoutes(deps: ApiDeps): Router {
  const { config, db, redis, taskQueues, taskReadCache, taskCreator, enqueueTask, logger, metrics } = deps;
  const router = Router();
  router.use(apiKeyAuth(deps));

  const taskIdParam = (res: Response, value: string | undefined): string => {
    // Hostile or malformed ids never reach the database.
    if (!value || !isId('task', value)) throw new HttpError(404, TASK_NOT_FOUND);
    locals(res).publicId = value;
    return value;
  };

  const create =
    (kind: TaskKind): RequestHandler =>
    async (req, res) => {
      const principal = keyPrincipal(res);
      if (req.body === undefined) throw badRequest('Request body must be a JSON object.');
      const body = parseOrThrow(createTaskSchemas[kind], req.body) as Record<string, unknown>;
      const draft = draftTask(kind, body, locals(res).rawBody ?? JSON.stringify(req.body));

      let idempotency: IdempotencyRequest | undefined;
      const idempotencyKey = req.get('idempotency-key');
      if (idempotencyKey !== undefined) {
        if (!IDEMPOTENCY_KEY.test(idempotencyKey)) throw badRequest('Idempotency-Key must be 1 to 255 printable ASCII characters.');
        idempotency = { key: idempotencyKey, fingerprint: requestFingerprint(kind, req.body) };
      }

      const { row, replayed } = await taskCreator.create(principal, draft, config.taskCosts[kind], idempotency);
      locals(res).publicId = row.public_id;
      if (replayed) {
        res.setHeader('Idempotent-Replayed', 'true');
      } else {
        metrics.tasksCreated.inc({ kind, key_type: principal.type });
        try {
          await enqueueTask(kind, row.public_id);
        } catch (err) {
          // The task is committed and paid for; the sweeper enqueues queued tasks Redis does not know.
          logger.error('could not enqueue task; left for the sweeper', { public_id: row.public_id, error: err });
        }
      }
      const base = baseUrl(req, config.publicBaseUrl);
      res.location(`${base}/api/tasks/${row.public_id}`);
      sendJson(res, 201, renderTask(row, base));
    };

  for (const kind of TASK_KINDS) {
    router.post(`/${kind}`, jsonBody(kind === 'face-detection' ? FACE_BODY_LIMIT : BODY_LIMIT), create(kind));
  }

  router.get('/', async (req, res) => {
    const principal = keyPrincipal(res);
    const q = parseOrThrow(listQuerySchema, req.query, 'Query');
    const { rows, nextCursor } = await listTasks(db.pool, principal.accountId, {
      statuses: q.status,
      kind: q.kind,
      limit: q.limit ?? 20,
      cursor: q.cursor,
    });
    const base = baseUrl(req, config.publicBaseUrl);
    sendJson(res, 200, `{"data":[${rows.map((r) => renderTask(r, base)).join(',')}],"next_cursor":${JSON.stringify(nextCursor)}}`);
  });

  const readTask = (res: Response, publicId: string) =>
    taskReadCache.get(keyPrincipal(res).accountId, publicId, locals(res).taskStatusMarker ?? null);

  router.get('/:publicId', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    const row = await readTask(res, publicId);
    if (!row) throw new HttpError(404, TASK_NOT_FOUND);
    sendJson(res, 200, renderTask(row, baseUrl(req, config.publicBaseUrl)));
  });

  router.post('/:publicId/cancel', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    const accountId = keyPrincipal(res).accountId;
    const row = await cancelTask({ pool: db.pool, redis }, accountId, publicId);
    taskReadCache.put(accountId, row);
    // Best effort: a waiting job is dropped now; one already running sees status 40 and stops.
    await taskQueues.queues[row.kind as TaskKind].remove(taskJobId(publicId)).catch(() => undefined);
    sendJson(res, 200, renderTask(row, baseUrl(req, config.publicBaseUrl)));
  });

  router.get('/:publicId/files/:name', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    const row = await readTask(res, publicId);
    if (!row) throw new HttpError(404, TASK_NOT_FOUND);
    const name = req.params.name;
    const file = name && FILE_NAME.test(name) ? taskFiles(row).find((f) => f.name === name) : undefined;
    if (!file) throw new HttpError(404, FILE_NOT_FOUND);
    // Headers given to sendFile are only set when the file is actually sent.
    const headers = {
      'Content-Type': file.content_type,
      'Cache-Control': 'private, max-age=86400, immutable',
      'Content-Disposition': `inline; filename="${file.name}"`,
    };
    await new Promise<void>((resolve, reject) => {
      res.sendFile(path.join(config.filesDir, publicId, file.name), { dotfiles: 'deny', headers }, (err) => {
        if (!err) resolve();
        else if (res.headersSent) resolve();
        else if ((err as NodeJS.ErrnoException).code === 'ENOENT') reject(new HttpError(404, FILE_NOT_FOUND));
        else reject(err);
      });
    });
  });

  return router;
}
