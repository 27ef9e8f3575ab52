// One request to the Task API with the client's timeout and retry rules. Which calls may be repeated
// is decided by the caller (`idempotent`); this file only knows when repeating can help.
import { TaskApiConnectionError, TaskApiError, TaskApiTimeoutError } from './errors';
import { API_VERSION } from './generated';
import { userAgent } from './version';

/** Longest `Retry-After` the client waits out by itself; a longer one (the daily limit) is thrown at once. */
export const MAX_RETRY_AFTER_SECONDS = 60;
/** Shortest pause before a retry the server timed with `Retry-After` (`0` would retry in a tight loop). */
export const MIN_RETRY_AFTER_MS = 500;
/** Backoff before retry n (0-based) is a random time between half and all of `min(BASE · 2ⁿ, MAX)`. */
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8_000;
/** Answers a gateway or an overloaded API gives; the request did not run (or may run again safely). */
const RETRYABLE_STATUSES = new Set([502, 503, 504]);

export type FetchFn = typeof globalThis.fetch;

export interface HttpOptions {
  apiKey: string;
  baseUrl: string;
  maxRetries: number;
  timeoutMs: number;
  fetch: FetchFn;
}

export interface RequestSpec {
  method: 'GET' | 'POST';
  /** A path below the base URL, or an absolute URL (signed file links). */
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Safe to repeat when no answer arrived or the API answered 502/503/504 (GET, create with its
   * Idempotency-Key, cancel). 429 is retried for every call: a rate-limited request was not run.
   */
  idempotent: boolean;
  /** Send the API key (not to signed file links, which may be another host). */
  auth?: boolean;
  /** This request's timeout instead of the client's (long-poll waits, downloads). */
  timeoutMs?: number;
  /**
   * A long poll (`Prefer: wait`): a 504 (a proxy's idle timeout cut it) or no answer in time is
   * thrown at once, without using up `maxRetries`; the caller simply polls again.
   */
  longPoll?: boolean;
  signal?: AbortSignal;
  as: 'json' | 'bytes';
  /**
   * A retry was answered 409 after an earlier attempt got no clear answer: the earlier attempt may
   * have done the work. Returns the result to use instead, or undefined to throw the 409.
   */
  onRetriedConflict?: () => Promise<unknown>;
}

export interface HttpResponse<T> {
  status: number;
  headers: Headers;
  data: T;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Exponential backoff with jitter, so many clients failing together do not retry together. */
export function backoffMs(retry: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retry);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** `Retry-After` as seconds (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not JSON (a proxy's error page): kept as text
  }
}

/** The `TaskApiError` of an error answer: the API's `message`, or the status when the body has none. */
export function errorFrom(res: Response, text: string): TaskApiError {
  const body = parseBody(text);
  const message = isRecord(body) && typeof body.message === 'string' ? body.message : `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
  return new TaskApiError(res.status, message, body, res.headers.get('x-request-id'));
}

export class HttpClient {
  private readonly userAgent = userAgent();

  constructor(readonly options: HttpOptions) {}

  url(path: string, query?: Record<string, string | undefined>): string {
    const url = new URL(/^https?:\/\//i.test(path) ? path : `${this.options.baseUrl}${path}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    return url.toString();
  }

  /**
   * The API key, the API version the client was generated for (so a newer API never changes the
   * shapes this code reads) and, in Node, the User-Agent, with `accept`.
   */
  private authHeaders(accept: string): Record<string, string> {
    const headers: Record<string, string> = { accept, 'x-api-key': this.options.apiKey, 'taskapi-version': API_VERSION };
    // Only in Node: browsers refuse to set it, and Firefox preflights a request that tries.
    if (this.userAgent !== undefined) headers['user-agent'] = this.userAgent;
    return headers;
  }

  async request<T>(spec: RequestSpec): Promise<HttpResponse<T>> {
    const { maxRetries } = this.options;
    // Unauthenticated requests (signed file links, possibly on another origin) carry no header of
    // ours: any non-safelisted header would make a browser send a CORS preflight first.
    const headers: Record<string, string> = { ...spec.headers, ...(spec.auth !== false ? this.authHeaders('application/json') : {}) };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const url = this.url(spec.path, spec.query);
    let unclear = false; // an earlier attempt may have reached the API without us seeing its answer

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < maxRetries;
      let res: Response;
      let text: string | Uint8Array;
      try {
        [res, text] = await this.once(url, spec, headers, body);
      } catch (err) {
        if (spec.signal?.aborted) throw spec.signal.reason;
        if (spec.longPoll && err instanceof TaskApiTimeoutError) throw err;
        // Part of the body had arrived: restarting a large download from zero could loop forever.
        if (err instanceof TaskApiTimeoutError && err.afterHeaders && spec.as === 'bytes') throw err;
        if (!(err instanceof TaskApiConnectionError) || !spec.idempotent || !retriesLeft) throw err;
        unclear = true;
        await sleep(backoffMs(attempt), spec.signal);
        continue;
      }
      if (res.ok) {
        if (spec.as === 'bytes') return { status: res.status, headers: res.headers, data: text as T };
        const parsed = parseBody(text as string);
        if (typeof parsed === 'string') throw new TaskApiError(res.status, 'The Task API answered with a body that is not JSON.', parsed, res.headers.get('x-request-id'));
        return { status: res.status, headers: res.headers, data: parsed as T };
      }

      const error = errorFrom(res, typeof text === 'string' ? text : new TextDecoder().decode(text));
      if (res.status === 409 && unclear && spec.onRetriedConflict) {
        const recovered = await spec.onRetriedConflict();
        if (recovered !== undefined) return { status: 200, headers: res.headers, data: recovered as T };
      }
      if (spec.longPoll && res.status === 504) throw error;
      if (!retriesLeft) throw error;
      const after = retryAfterSeconds(res.headers.get('retry-after')) ?? (isRecord(error.body) && typeof error.body.retry_after === 'number' ? error.body.retry_after : undefined);
      // Not worth blocking on (a daily limit, a long maintenance): the caller decides what to do.
      if ((res.status === 429 || RETRYABLE_STATUSES.has(res.status)) && after !== undefined && after > MAX_RETRY_AFTER_SECONDS) throw error;
      if (res.status === 429) {
        if (after === undefined) throw error;
        await sleep(Math.max(MIN_RETRY_AFTER_MS, after * 1000), spec.signal);
        continue;
      }
      if (RETRYABLE_STATUSES.has(res.status) && spec.idempotent) {
        unclear = true;
        await sleep(after !== undefined ? Math.max(MIN_RETRY_AFTER_MS, after * 1000) : backoffMs(attempt), spec.signal);
        continue;
      }
      throw error;
    }
  }

  /**
   * Opens a streamed GET (server-sent events): resolves with the response once its status and
   * headers arrived within the client's `timeoutMs`, whatever the status; its body is the caller's
   * to read, and `signal` aborts it. Not retried: the caller decides. No answer is thrown as
   * `TaskApiConnectionError` (`TaskApiTimeoutError` after `timeoutMs`), an abort as the signal's reason.
   */
  async openStream(path: string, signal: AbortSignal): Promise<Response> {
    const url = this.url(path);
    const { timeoutMs } = this.options;
    let timedOut = false;
    const controller = new AbortController();
    const timer = setTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      Math.min(timeoutMs, 2 ** 31 - 1),
    );
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    // Stays for the body: aborting `signal` closes the connection.
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.options.fetch(url, { method: 'GET', headers: this.authHeaders('text/event-stream'), signal: controller.signal, redirect: 'follow' });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timedOut) throw new TaskApiTimeoutError(`No answer from ${new URL(url).origin} within ${timeoutMs} ms.`, err);
      throw new TaskApiConnectionError(`Could not reach ${new URL(url).origin}: ${failureReason(err)}`, err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One attempt, body read included, under the timeout; failures without an answer become `TaskApiConnectionError`. */
  private async once(url: string, spec: RequestSpec, headers: Record<string, string>, body: string | undefined): Promise<[Response, string | Uint8Array]> {
    const timeoutMs = spec.timeoutMs ?? this.options.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    let afterHeaders = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      Math.min(timeoutMs, 2 ** 31 - 1), // a longer timer would fire at once
    );
    const onAbort = () => controller.abort(spec.signal?.reason);
    if (spec.signal?.aborted) onAbort();
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.options.fetch(url, { method: spec.method, headers, body, signal: controller.signal, redirect: 'follow' });
      afterHeaders = true;
      const text = spec.as === 'bytes' && res.ok ? new Uint8Array(await res.arrayBuffer()) : await res.text();
      return [res, text];
    } catch (err) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      if (timedOut) {
        const what = afterHeaders ? `The answer from ${new URL(url).origin} did not arrive in full` : `No answer from ${new URL(url).origin}`;
        throw new TaskApiTimeoutError(`${what} within ${timeoutMs} ms.`, err, afterHeaders);
      }
      throw new TaskApiConnectionError(`Could not reach ${new URL(url).origin}: ${failureReason(err)}`, err);
    } finally {
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The most useful words of a fetch failure (undici puts the reason in `cause`). */
function failureReason(err: unknown): string {
  const cause = isRecord(err) && err.cause instanceof Error ? err.cause : undefined;
  const message = cause?.message || (err instanceof Error ? err.message : String(err));
  const code = isRecord(cause) && typeof cause.code === 'string' ? cause.code : undefined;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}
