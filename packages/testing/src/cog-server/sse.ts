// A prediction as a server-sent event stream, as coglet writes one (prediction_sse_stream in
// routes.rs): the buffered events, then live ones, closed after `completed`. A stream that attaches
// after events fell out of the replay buffer gets one `error` event and is closed. A comment every
// 15 s keeps proxies from cutting a quiet stream.
import type { ServerResponse } from 'node:http';
import type { Prediction, StreamEvent } from './prediction';

/** How many streams may follow one prediction (coglet: the broadcast channel's 1024); more get 429. */
export const MAX_STREAM_SUBSCRIBERS = 1024;

const KEEP_ALIVE_MS = 15_000;

/** Streams `prediction` on `res`; `onClose` runs once the response is over, however it ended. */
export function streamPrediction(res: ServerResponse, prediction: Prediction, onClose: () => void): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const write = (event: string, data: unknown): void => {
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  // Started once the replay is sent; until then there is nothing to clear.
  const timers: { keepAlive?: NodeJS.Timeout } = {};
  const end = (): void => {
    subscription.unsubscribe();
    clearInterval(timers.keepAlive);
    res.end();
  };
  const forward = (event: StreamEvent): void => {
    write(event.event, event.data);
    if (event.event === 'completed') end();
  };
  const subscription = prediction.subscribe(forward);
  res.once('close', () => {
    subscription.unsubscribe();
    clearInterval(timers.keepAlive);
    onClose();
  });
  if (subscription.skipped > 0) {
    write('error', { error: 'SSE stream replay truncated; events were dropped', skipped: subscription.skipped });
    return end();
  }
  for (const event of subscription.replay) {
    write(event.event, event.data);
    if (event.event === 'completed') return end();
  }
  timers.keepAlive = setInterval(() => res.write(':keep-alive\n\n'), KEEP_ALIVE_MS);
}
