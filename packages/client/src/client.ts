import { Files } from './files';
import { HttpClient, type FetchFn } from './http';
import { checkLongPollSeconds, DEFAULT_LONG_POLL_SECONDS, Tasks } from './tasks';
import { runtimeProcess } from './version';

/** Default `timeoutMs`: per request, long-poll waits get their wait on top. */
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RETRIES = 2;

export interface TaskApiOptions {
  /** `sk-live-…` or `sk-test-…`. */
  apiKey: string;
  /** e.g. `https://api.example.com`. Default: the `TASKAPI_BASE_URL` environment variable (where there is a `process`). */
  baseUrl?: string;
  /** Retries after 429, 502/503/504 and network failures (the latter only for calls safe to repeat). Default 2. */
  maxRetries?: number;
  /** Time limit of each request, in milliseconds. Default 60000 (downloads: 5 min, see `files.download`). */
  timeoutMs?: number;
  /**
   * How long each long poll of `tasks.wait()` is held (`Prefer: wait=N`), 1 to 60 seconds. Default
   * 50: under the 60 s idle timeout of common proxies (nginx, AWS ALB), which would cut it with a 504.
   */
  longPollSeconds?: number;
  /** A `fetch` to use instead of the global one (tests, proxies, instrumented clients). */
  fetch?: FetchFn;
}

/** A client of the Task API: `api.tasks` and `api.files`. */
export class TaskApi {
  readonly tasks: Tasks;
  readonly files: Files;

  constructor(options: TaskApiOptions) {
    if (typeof options?.apiKey !== 'string' || options.apiKey === '') throw new TypeError('TaskApi needs an apiKey.');
    const baseUrl = options.baseUrl ?? runtimeProcess?.env?.TASKAPI_BASE_URL;
    if (!baseUrl) throw new TypeError('TaskApi needs a baseUrl (or the TASKAPI_BASE_URL environment variable).');
    if (!/^https?:\/\/[^/]/i.test(baseUrl)) throw new TypeError(`TaskApi baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}.`);
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new TypeError('maxRetries must be a whole number ≥ 0.');
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new TypeError('timeoutMs must be a positive number of milliseconds.');
    const fetchFn = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== 'function') throw new TypeError('No fetch available: pass one as the fetch option.');
    const http = new HttpClient({
      apiKey: options.apiKey,
      baseUrl: baseUrl.replace(/\/+$/, ''),
      maxRetries,
      timeoutMs,
      // Called unbound: some runtimes' fetch refuses a `this` other than the global object.
      fetch: (input, init) => fetchFn(input, init),
    });
    this.tasks = new Tasks(http, checkLongPollSeconds(options.longPollSeconds ?? DEFAULT_LONG_POLL_SECONDS));
    this.files = new Files(http);
  }
}
