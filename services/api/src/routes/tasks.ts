import express, { Router, type RequestHandler, type Response } from 'express';
import { TASK_KINDS, type TaskKind } from '@taskapi/domain';
import { taskJobId } from '@taskapi/queue';
import type { ApiDeps } from '../deps';
import { apiKeyAuth } from '../http/api-key-auth';
import { ApiError } from '../errors';
import { keyPrincipal, locals } from '../http/request-context';
import { sendJson, sendTask, sendTaskFile, sendTaskList, taskIdParam } from '../http/task-responses';
import { parseOrThrow } from '../http/validation';
import { cancelTask } from '../domain/cancel-task';
import { requestFingerprint, type IdempotencyRequest } from '../domain/create-task';
import { createTaskSchemas, draftTask, MAX_IMAGE_BYTES } from '../domain/task-input';
import { renderTask } from '../domain/task-view';

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
      next(new ApiError('CONTENT_TYPE_NOT_JSON'));
      return;
    }
    parse(req, res, next);
  };
}

/** The `/api/tasks` router: every request authenticated by API key and rate limited. */
export function taskRoutes(deps: ApiDeps): Router {
  const { config, db, redis, taskQueues, taskReadCache, taskCreator, enqueueTask, logger, metrics } = deps;
  const router = Router();
  router.use(apiKeyAuth(deps));

  const create =
    (kind: TaskKind): RequestHandler =>
    async (req, res) => {
      const principal = keyPrincipal(res);
      if (req.body === undefined) throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a JSON object' } });
      const body = parseOrThrow(createTaskSchemas[kind], req.body) as Record<string, unknown>;
      const draft = draftTask(kind, body, locals(res).rawBody ?? JSON.stringify(req.body));

      let idempotency: IdempotencyRequest | undefined;
      const idempotencyKey = req.get('idempotency-key');
      if (idempotencyKey !== undefined) {
        if (!IDEMPOTENCY_KEY.test(idempotencyKey)) throw new ApiError('INVALID_IDEMPOTENCY_KEY');
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
      res.location(`${config.publicBaseUrl}/api/tasks/${row.public_id}`);
      sendJson(res, 201, renderTask(row, config.publicBaseUrl));
    };

  for (const kind of TASK_KINDS) {
    router.post(`/${kind}`, jsonBody(kind === 'face-detection' ? FACE_BODY_LIMIT : BODY_LIMIT), create(kind));
  }

  router.get('/', async (req, res) => {
    await sendTaskList(res, db.pool, keyPrincipal(res).accountId, req.query, config.publicBaseUrl);
  });

  const readTask = (res: Response, publicId: string) =>
    taskReadCache.get(keyPrincipal(res).accountId, publicId, locals(res).taskStatusMarker ?? null);

  router.get('/:publicId', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    sendTask(res, await readTask(res, publicId), config.publicBaseUrl);
  });

  router.post('/:publicId/cancel', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    const accountId = keyPrincipal(res).accountId;
    const row = await cancelTask({ pool: db.pool, redis }, accountId, publicId);
    taskReadCache.put(accountId, row);
    // Best effort: a waiting job is dropped now; one already running sees status 40 and stops.
    await taskQueues.queues[row.kind as TaskKind].remove(taskJobId(publicId)).catch(() => undefined);
    sendJson(res, 200, renderTask(row, config.publicBaseUrl));
  });

  router.get('/:publicId/files/:name', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    await sendTaskFile(res, config.filesDir, await readTask(res, publicId), req.params.name);
  });

  return router;
}
