// A task read with a browser read token (docs/api.md, "Browser read tokens"): the answers of the
// key-authenticated routes, for the one task the token names; any other task is not found, as an
// unknown one. CORS for CORS_ALLOWED_ORIGINS is applied before these run (http/public-cors.ts).
import { ApiError } from '../../errors';
import type { ReadTokenPrincipal } from '../../http/request-context';
import type { Route } from '../../http/route';
import { accessTokenQuery } from '../../schemas/read-tokens';
import { getTaskRoute } from '../tasks/get-task';
import { getTaskFileRoute } from '../tasks/get-task-file';
import { taskEventsRoute } from '../tasks/task-events';

const TOKEN_NOTE =
  ' With a read token (`Authorization: Bearer <token>`, or `?access_token=` where headers cannot be sent) instead of the API key; ' +
  "the minting key's rate limits apply. A token of another task answers 404, as an unknown task.";

/** `route` under `/api/public`, authenticated by a read token of the task in its path. */
function withReadToken(route: Route, own: Pick<Route, 'operationId' | 'path' | 'summary'>): Route {
  return {
    ...route,
    ...own,
    // Version changes written for the key's route shape this one's answers too: they are the same.
    versionedAs: route.path,
    tag: 'Public task reads',
    description: `${route.description ?? ''}${TOKEN_NOTE}`,
    auth: 'readToken',
    query: accessTokenQuery,
    handler: (input, ctx) => {
      const { publicId } = input.params as { publicId: string };
      if ((ctx.principal as ReadTokenPrincipal).readTaskId !== publicId) throw new ApiError('TASK_NOT_FOUND');
      return route.handler(input, ctx);
    },
  };
}

/** `GET /api/public/tasks/{publicId}`: as `GET /api/tasks/{publicId}`. */
export const getPublicTaskRoute = withReadToken(getTaskRoute, {
  operationId: 'getPublicTask',
  path: '/api/public/tasks/{publicId}',
  summary: 'Get a task with a read token',
});

/** `GET /api/public/tasks/{publicId}/events`: as `GET /api/tasks/{publicId}/events`, until the token expires. */
export const getPublicTaskEventsRoute = withReadToken(
  { ...taskEventsRoute, description: `${taskEventsRoute.description ?? ''} With a read token the stream also ends when the token expires; reconnecting is then refused (401).` },
  {
    operationId: 'getPublicTaskEvents',
    path: '/api/public/tasks/{publicId}/events',
    summary: "Stream a task's changes with a read token (server-sent events)",
  },
);

/** `GET /api/public/tasks/{publicId}/files/{name}`: as `GET /api/tasks/{publicId}/files/{name}`. */
export const getPublicTaskFileRoute = withReadToken(getTaskFileRoute, {
  operationId: 'getPublicTaskFile',
  path: '/api/public/tasks/{publicId}/files/{name}',
  summary: 'Download a file of a task with a read token',
});
