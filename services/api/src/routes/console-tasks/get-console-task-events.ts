import { renderTask, routeFileUrls } from '../../domain/task-view';
import { streamTaskEvents, TASK_EVENTS_CONTENT } from '../../http/event-stream';
import { defineRoute } from '../../http/route';
import { TASK_EVENTS_DESCRIPTION } from '../tasks/task-events';
import { taskParams } from '../tasks/task-params';
import { CONSOLE_TASKS_ROOT } from './list-console-tasks';

/** `GET /api/console/tasks/{publicId}/events`: the task page's live status and progress bar. */
export const getConsoleTaskEventsRoute = defineRoute({
  operationId: 'getConsoleTaskEvents',
  method: 'get',
  path: '/api/console/tasks/{publicId}/events',
  tag: 'Console tasks',
  summary: "Stream a task's changes (console)",
  description: `${TASK_EVENTS_DESCRIPTION} File links point at the console's own file route, as in the console's task JSON.`,
  auth: 'session',
  params: taskParams,
  responses: {
    200: { description: "The task's events, until its terminal state.", headers: ['Cache-Control-Stream', 'X-Accel-Buffering'], content: TASK_EVENTS_CONTENT },
  },
  errors: ['TOO_MANY_TASK_STREAMS', 'TASK_STREAMS_UNAVAILABLE'],
  handler: ({ params }, { deps, principal, res }) => {
    const urlOf = routeFileUrls(deps.config.publicBaseUrl, CONSOLE_TASKS_ROOT);
    return streamTaskEvents(deps, res, principal.accountId, params.publicId, (task) => renderTask(task.row, urlOf, task.progress, task.queue));
  },
});
