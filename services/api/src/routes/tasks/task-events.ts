import { renderTask } from '../../domain/task-view';
import { streamTaskEvents, TASK_EVENTS_CONTENT } from '../../http/event-stream';
import { defineRoute } from '../../http/route';
import { taskParams } from './task-params';

/** What the stream sends, when it ends, and what it costs (both event stream routes). */
export const TASK_EVENTS_DESCRIPTION =
  'Server-sent events (`text/event-stream`) of one task: an `event: task` whose `data` is the task JSON (as `GET` answers it, ' +
  'on one line) at once, again on every status change, and on progress changes at most twice a second (the last value always ' +
  "arrives). After the terminal state's event (20, 30, 40) the server closes the stream. It is also closed when the server " +
  'shuts down: reconnect, and the first event gives the current state. A `: keep-alive` comment comes at least every 15 s so ' +
  'proxies keep the connection. Woken by the task\'s events, not by polling. The stream is held like a `Prefer: wait` request ' +
  '(429 when the account holds too many on the server, 503 when the server does).';

/** `GET /api/tasks/{publicId}/events`: the task's changes as they happen. Counts once against the rate limits. */
export const taskEventsRoute = defineRoute({
  operationId: 'getTaskEvents',
  method: 'get',
  path: '/api/tasks/{publicId}/events',
  tag: 'Tasks',
  summary: "Stream a task's changes (server-sent events)",
  description: `${TASK_EVENTS_DESCRIPTION} The stream counts once against the rate limits.`,
  auth: 'apiKey',
  params: taskParams,
  responses: {
    200: { description: "The task's events, until its terminal state.", headers: ['Cache-Control-Stream', 'X-Accel-Buffering'], content: TASK_EVENTS_CONTENT },
  },
  errors: ['TOO_MANY_TASK_STREAMS', 'TASK_STREAMS_UNAVAILABLE'],
  handler: ({ params }, { deps, principal, res }) =>
    streamTaskEvents(deps, res, principal.accountId, params.publicId, async (task) => renderTask(task.row, await deps.fileLinks.forRows([task.row]), task.progress, task.queue)),
});
