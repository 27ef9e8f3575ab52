// Writes a task's event stream as server-sent events (text/event-stream). What is sent, and when,
// is `TaskEventStream`'s (domain/task-events.ts); this file only knows the wire format.
import type { Response } from 'express';
import type { ApiDeps } from '../deps';
import { TaskEventStream, type RenderTask } from '../domain/task-events';
import { downgradeResponse, downgradesResponses } from './api-version';
import { locals } from './request-context';

/** Documented response of the event stream routes: the media type with an example. */
export const TASK_EVENTS_CONTENT = {
  'text/event-stream': {
    schema: {
      type: 'string',
      description:
        'Server-sent events: `event: task` with `data:` the task JSON (one line), and `: keep-alive` comments; see the operation.',
    },
  },
};

/** The SSE fields of one event; the data is one line (JSON needs no line breaks: any are whitespace). */
export function taskEventText(json: string): string {
  return `event: task\ndata: ${json.replace(/\r\n|[\r\n]/g, ' ')}\n\n`;
}

/** Sent between events so that idle proxies keep the connection. */
export const KEEP_ALIVE_TEXT = ': keep-alive\n\n';

/**
 * Serves the event stream of the caller's task `publicId`: follows and reads it (an unknown task
 * or a refused hold throws the error its request answers with, before any header is sent), then
 * streams it (`sendTaskEvents`). `render` gives the task JSON with the route's file URLs.
 */
export async function streamTaskEvents(deps: ApiDeps, res: Response, accountId: string, publicId: string, render: RenderTask): Promise<{ sent: true }> {
  const stream = await TaskEventStream.open(
    { taskReader: deps.taskReader, taskWaiters: deps.taskWaiters, logger: deps.logger, timings: deps.taskEventTimings },
    accountId,
    publicId,
    render,
  );
  return sendTaskEvents(res, stream);
}

/**
 * Answers 200 with the stream's events until it ends, then closes the response. Unbuffered by
 * proxies (`X-Accel-Buffering: no`) and caches (`Cache-Control: no-cache`). A client that goes
 * away stops the stream; a HEAD request gets the headers only. A stream opened with a read token
 * ends when the token expires: what it reads is the token's to say, and a reconnection is refused
 * (docs/api.md, "Browser read tokens").
 */
export function sendTaskEvents(res: Response, stream: TaskEventStream): { sent: true } {
  // Gone while its task was read: 'close' has fired already.
  if (res.closed || res.destroyed || res.writableEnded) {
    stream.stop();
    return { sent: true };
  }
  res.statusCode = 200;
  locals(res).streamOpenedAt = process.hrtime.bigint();
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.on('close', () => stream.stop());
  if (res.req.method === 'HEAD') {
    stream.stop();
    res.end();
    return { sent: true };
  }
  const endsAt = locals(res).readTokenEndsAt;
  if (endsAt !== undefined) {
    // Tokens live a day at most: within setTimeout's range.
    const expiry = setTimeout(() => {
      stream.stop();
      if (!res.writableEnded) res.end();
    }, Math.max(0, endsAt - Date.now()));
    expiry.unref();
    res.on('close', () => clearTimeout(expiry));
  }
  // A connection can be gone a moment before its `close` stops the stream: nothing is written then.
  const write = (text: string) => void (res.destroyed || res.writableEnded || res.write(text));
  // A request pinned to an older version gets each event's task in that version's shape.
  const shape = downgradesResponses(res) ? (json: string) => JSON.stringify(downgradeResponse(res.req, res, 200, JSON.parse(json))) : (json: string) => json;
  stream.start({
    task: (json) => write(taskEventText(shape(json))),
    keepAlive: () => write(KEEP_ALIVE_TEXT),
    end: () => void (res.writableEnded || res.end()),
  });
  return { sent: true };
}
