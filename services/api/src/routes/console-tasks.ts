import { Router, type RequestHandler } from 'express';
import type { ApiDeps } from '../deps';
import { sessionPrincipal } from '../http/request-context';
import { sendTask, sendTaskFile, sendTaskList, taskIdParam } from '../http/task-responses';
import { getTask } from '../domain/task-queries';

/** Mount point of this router; the task JSON it sends points its file URLs here too. */
export const CONSOLE_TASKS_ROOT = '/api/console/tasks';

/**
 * `/api/console/tasks`: the account's tasks for the console, read with a login session (the task
 * API itself stays API-key only). Same queries and JSON as `/api/tasks`, except that file URLs
 * point at this router's file route, which the session can fetch.
 */
export function consoleTaskRoutes(deps: ApiDeps, requireSession: RequestHandler): Router {
  const { config, db } = deps;
  const router = Router();
  router.use(requireSession);

  router.get('/', async (req, res) => {
    await sendTaskList(res, db.pool, sessionPrincipal(res).accountId, req.query, config.publicBaseUrl, CONSOLE_TASKS_ROOT);
  });

  // Straight from PostgreSQL: console reads are rare, and the read cache is validated by markers
  // that only the key-authenticated path fetches.
  router.get('/:publicId', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    const row = await getTask(db.pool, sessionPrincipal(res).accountId, publicId);
    sendTask(res, row, config.publicBaseUrl, CONSOLE_TASKS_ROOT);
  });

  router.get('/:publicId/files/:name', async (req, res) => {
    const publicId = taskIdParam(res, req.params.publicId);
    await sendTaskFile(res, config.filesDir, await getTask(db.pool, sessionPrincipal(res).accountId, publicId), req.params.name);
  });

  return router;
}
