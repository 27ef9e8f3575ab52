// @taskapi/client/browser: follows one task from a web page with a read token its server minted
// (`api.tasks.createReadToken`), never an API key (packages/client/README.md, "In the browser").
// fetch and streams only: no Node built-ins, no API key, nothing but the one task the token reads.
import type { Task } from './generated';
import { API_VERSION } from './generated';
import { TaskApiConnectionError } from './errors';
import { errorFrom } from './http';
import { DEFAULT_EVENT_IDLE_TIMEOUT_MS, DEFAULT_EVENT_RECONNECTS, taskEvents, type EventsOptions } from './task-events';

export { TaskApiConnectionError, TaskApiError } from './errors';
export type { Task, TaskStatus, TaskFile } from './generated';
export { DEFAULT_EVENT_IDLE_TIMEOUT_MS, DEFAULT_EVENT_RECONNECTS };

export interface WatchTaskOptions extends EventsOptions {
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

/**
 * The task's states as they happen, from `GET /api/public/tasks/{id}/events` with the read token
 * `token`: the task at once, again on every status change and on progress changes (at most twice
 * a second), ending with its terminal state (20, 30, 40). A cut stream (network, 429, 5xx, the
 * server restarting, nothing received for `idleTimeoutMs`) is reopened after a short backoff, up to
 * `maxReconnects` times in a row; a refused token (401: missing, invalid, expired, its key revoked)
 * or another task (404) is thrown as `TaskApiError` with the API's `message`.
 *
 * The token goes as `Authorization: Bearer` over fetch (so it is not in the URL). The API must list
 * the page's origin in `CORS_ALLOWED_ORIGINS`.
 */
export function watchTask(baseUrl: string, id: string, token: string, options: WatchTaskOptions = {}): AsyncGenerator<Task, void, undefined> {
  if (typeof token !== 'string' || token.length === 0) throw new TypeError('watchTask() needs the read token its server minted.');
  const url = `${baseUrl.replace(/\/+$/, '')}/api/public/tasks/${encodeURIComponent(id)}/events`;
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  const headers = { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'taskapi-version': API_VERSION };
  // A connection that could not be made (the server restarting, the network gone, a page's origin
  // the API does not allow) is a connection failure: reopened like a cut stream, then thrown.
  const open = (signal: AbortSignal) =>
    fetchFn(url, { headers, signal, cache: 'no-store' }).catch((err: unknown) => {
      if (signal.aborted) throw err;
      throw new TaskApiConnectionError(`The event stream could not be opened: ${err instanceof Error ? err.message : String(err)}`, err);
    });
  return taskEvents(open, options);
}

/** The task once, as `GET /api/public/tasks/{id}` answers it with the read token. */
export async function readTask(baseUrl: string, id: string, token: string, options: { fetch?: typeof globalThis.fetch; signal?: AbortSignal } = {}): Promise<Task> {
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  const res = await fetchFn(`${baseUrl.replace(/\/+$/, '')}/api/public/tasks/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${token}`, 'taskapi-version': API_VERSION },
    signal: options.signal,
    cache: 'no-store',
  });
  const text = await res.text();
  if (!res.ok) throw errorFrom(res, text);
  return JSON.parse(text) as Task;
}
