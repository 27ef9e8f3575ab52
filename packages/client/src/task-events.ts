// `tasks.events(id)`: a task's server-sent events (`GET /api/tasks/{id}/events`) as an async
// iterable of task objects, reconnecting after a dropped connection. eventsource-parser is bundled
// into the package by the build, so the package still has no runtime dependencies.
import { createParser } from 'eventsource-parser';
import { TaskApiConnectionError, TaskApiError } from './errors';
import type { Task, TaskStatus } from './generated';
import { backoffMs, errorFrom, MAX_RETRY_AFTER_SECONDS, MIN_RETRY_AFTER_MS, retryAfterSeconds, sleep } from './http';

/** Opens one connection to the stream (the API key's client, or a browser's fetch with a read token). */
export type OpenStream = (signal: AbortSignal) => Promise<Response>;

/** Reconnections in a row (without an event between) before `events()` gives up. */
export const DEFAULT_EVENT_RECONNECTS = 5;
/**
 * A connection that brings nothing for this long is taken for dead and reopened: the API sends a
 * keep-alive comment at least every 15 s, so this leaves room for two lost ones.
 */
export const DEFAULT_EVENT_IDLE_TIMEOUT_MS = 45_000;

const TERMINAL: readonly TaskStatus[] = [20, 30, 40];

export interface EventsOptions {
  /** Ends the iteration: the pending `next()` rejects with the signal's reason and the connection is closed. */
  signal?: AbortSignal;
  /**
   * How many times in a row a dropped connection (network failure, 429 or 5xx, the server shutting
   * down, nothing received for `idleTimeoutMs`) is reopened, after a short backoff (or the
   * answer's `Retry-After`), before the last failure is thrown. The count starts again with each
   * event received. Default 5.
   */
  maxReconnects?: number;
  /** Milliseconds without a byte (event or keep-alive) after which the connection is reopened. Default 45000. */
  idleTimeoutMs?: number;
}

/** Worth reopening: no answer or a broken body (status 0), 429, or 5xx. */
const reopens = (err: unknown) => err instanceof TaskApiError && (err.status === 0 || err.status === 429 || err.status >= 500);

/** A body that broke off (fetch rejects the read, with a TypeError in most runtimes) is a connection failure. */
const brokenOff = (err: unknown): never => {
  throw new TaskApiConnectionError(`The event stream broke off: ${err instanceof Error ? err.message : String(err)}`, err);
};

/**
 * The task as the API streams it: at once, on every status change, and on progress changes (at
 * most twice a second); the iteration ends after a terminal task (20, 30, 40). A 4xx other than 429
 * (an unknown task, a bad key) is thrown at once, as `TaskApiError`.
 */
export async function* taskEvents(open: OpenStream, options: EventsOptions = {}): AsyncGenerator<Task, void, undefined> {
  const maxReconnects = options.maxReconnects ?? DEFAULT_EVENT_RECONNECTS;
  if (!Number.isInteger(maxReconnects) || maxReconnects < 0) throw new TypeError('events() maxReconnects must be a whole number ≥ 0.');
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_EVENT_IDLE_TIMEOUT_MS;
  if (!(Number.isFinite(idleTimeoutMs) && idleTimeoutMs > 0)) throw new TypeError('events() idleTimeoutMs must be a positive number of milliseconds.');
  const { signal } = options;
  let lastData: string | undefined;
  for (let failures = 0; ; ) {
    if (signal?.aborted) throw signal.reason;
    const connection = new AbortController();
    const onAbort = () => connection.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    /** Seconds the error answer asked to wait (`Retry-After`). */
    let retryAfter: number | undefined;
    try {
      const res = await open(connection.signal);
      if (!res.ok) {
        retryAfter = retryAfterSeconds(res.headers.get('retry-after'));
        throw errorFrom(res, await res.text().catch(brokenOff));
      }
      if (!res.body) throw new TaskApiConnectionError('The answer to the event stream request has no body.');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const received: string[] = [];
      const parser = createParser({ onEvent: (e) => void (e.event === 'task' && received.push(e.data)) });
      for (;;) {
        const chunk = await readWithin(reader, idleTimeoutMs, connection);
        if (chunk === undefined) throw new TaskApiConnectionError('The server closed the event stream before the task ended.');
        parser.feed(chunk);
        for (const data of received.splice(0)) {
          failures = 0;
          // After a reconnect the first event often repeats the last one seen.
          if (data === lastData) continue;
          lastData = data;
          const task = JSON.parse(data) as Task;
          yield task;
          if (TERMINAL.includes(task.status)) return;
        }
      }
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      // A wait longer than a minute (a daily limit, maintenance) is the caller's to decide on.
      if (!reopens(err) || failures >= maxReconnects || (retryAfter ?? 0) > MAX_RETRY_AFTER_SECONDS) throw err;
      await sleep(retryAfter !== undefined ? Math.max(MIN_RETRY_AFTER_MS, retryAfter * 1000) : backoffMs(failures), signal);
      failures++;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Closes the connection whenever this one is done with (the iteration ended, or it is reopened).
      connection.abort();
    }
  }
}

/** The next chunk, or undefined at the end of the stream; after `ms` without one, the connection is closed and this throws. */
async function readWithin(reader: ReadableStreamDefaultReader<string>, ms: number, connection: AbortController): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const quiet = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new TaskApiConnectionError(`Nothing arrived on the event stream for ${ms} ms.`));
      connection.abort();
    }, ms);
  });
  try {
    const { done, value } = await Promise.race([reader.read().catch(brokenOff), quiet]);
    return done ? undefined : value;
  } finally {
    clearTimeout(timer);
  }
}
