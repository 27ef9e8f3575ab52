import { TaskApiError, TaskApiTimeoutError, TaskWaitTimeoutError } from './errors';
import type { BulkCancelRequest, BulkCancelResult, CreateTaskInputs, ReadToken, Task, TaskBatch, TaskKind, TaskList, TaskStatus } from './generated';
import { sleep, type HttpClient } from './http';
import { taskEvents, type EventsOptions } from './task-events';

/** A task of a known kind (what `create(kind, …)` and a filtered `list` give back). */
export type TaskOf<K extends TaskKind = TaskKind> = Task & { kind: K };

/** Statuses after which a task never changes: completed, failed, cancelled. */
export const TERMINAL_STATUSES: readonly TaskStatus[] = [20, 30, 40];

/** Longest `Prefer: wait=N` the API honours. */
export const MAX_WAIT_SECONDS = 60;
/**
 * Default `Prefer: wait=N` of `wait()`: below the 60 s idle timeout of common proxies and load
 * balancers (nginx, AWS ALB), which would otherwise cut a full-length poll with a 504.
 */
export const DEFAULT_LONG_POLL_SECONDS = 50;
/** Longest delay a timer takes (2³¹−1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Extra time a long-poll request gets beyond the wait it asked for (network, queueing). */
const LONG_POLL_GRACE_MS = 15_000;

export interface RequestOptions {
  /** Aborts the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface CreateOptions extends RequestOptions {
  /**
   * `Idempotency-Key` header: the same key with the same body within 24 h returns the first task
   * and charges once. Default: a fresh UUID per `create` call, reused by its retries.
   */
  idempotencyKey?: string;
}

export interface WaitOptions extends RequestOptions {
  /** Give up after this many milliseconds (rejects with `TaskWaitTimeoutError`). Default: no limit. */
  timeoutMs?: number;
  /**
   * The longest each long poll is held (`Prefer: wait=N`), 1 to 60 seconds. Default: the client's
   * `longPollSeconds` (50). Keep it below the idle timeout of any proxy between you and the API.
   */
  longPollSeconds?: number;
}

/** A long poll that ended without the task's state: a proxy cut it (504) or no answer came in time. */
const isCutLongPoll = (err: unknown) => err instanceof TaskApiTimeoutError || (err instanceof TaskApiError && err.status === 504);

/** Checks a `longPollSeconds` option: a whole number of seconds the API honours. */
export function checkLongPollSeconds(seconds: number, name = 'longPollSeconds'): number {
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_WAIT_SECONDS) throw new TypeError(`${name} must be a whole number of seconds from 1 to ${MAX_WAIT_SECONDS}.`);
  return seconds;
}

export interface ListOptions<K extends TaskKind = TaskKind> extends RequestOptions {
  kind?: K;
  /** One status or several. */
  status?: TaskStatus | readonly TaskStatus[];
  /** Only tasks created with this `fairness_key`. */
  fairnessKey?: string;
  /** Page size, 1 to 100 (the API's default is 20). The iterator fetches pages until the last. */
  limit?: number;
  /** Start after this task (a `next_cursor` from an earlier page). */
  cursor?: string;
}

const taskPath = (id: string) => `/api/tasks/${encodeURIComponent(id)}`;

export class Tasks {
  constructor(
    private readonly http: HttpClient,
    private readonly longPollSeconds = DEFAULT_LONG_POLL_SECONDS,
  ) {}

  /**
   * `POST /api/tasks/{kind}`: creates (and pays for) a task. Retried safely: every attempt carries
   * the same `Idempotency-Key`, so a retry after a lost answer returns the first task and charges once.
   */
  async create<K extends TaskKind>(kind: K, input: CreateTaskInputs[K], options: CreateOptions = {}): Promise<TaskOf<K>> {
    const idempotencyKey = options.idempotencyKey ?? randomUuid();
    const res = await this.http.request<TaskOf<K>>({
      method: 'POST',
      path: `/api/tasks/${encodeURIComponent(kind)}`,
      body: input,
      headers: { 'idempotency-key': idempotencyKey },
      idempotent: true,
      signal: options.signal,
      as: 'json',
    });
    return res.data;
  }

  /**
   * `POST /api/tasks/{kind}/batch`: creates 1 to 100 tasks of one kind with one charge, all or
   * none, and resolves with them in the order of `items`. Retried safely like `create`: every
   * attempt carries the same `Idempotency-Key`. A refused batch created nothing: a `TaskApiError`
   * whose `body.errors` name `tasks[i].field` (400), or a 402 (credits or the key's spend limit).
   */
  async createBatch<K extends TaskKind>(kind: K, items: ReadonlyArray<CreateTaskInputs[K]>, options: CreateOptions = {}): Promise<Array<TaskOf<K>>> {
    const idempotencyKey = options.idempotencyKey ?? randomUuid();
    const res = await this.http.request<TaskBatch>({
      method: 'POST',
      path: `/api/tasks/${encodeURIComponent(kind)}/batch`,
      body: { tasks: items },
      headers: { 'idempotency-key': idempotencyKey },
      idempotent: true,
      signal: options.signal,
      as: 'json',
    });
    return res.data.data as Array<TaskOf<K>>;
  }

  /** `GET /api/tasks/{id}`: the task with its `result` and `files`. */
  async get(id: string, options: RequestOptions = {}): Promise<Task> {
    return (await this.http.request<Task>({ method: 'GET', path: taskPath(id), idempotent: true, signal: options.signal, as: 'json' })).data;
  }

  /**
   * `POST /api/tasks/{id}/cancel`: status 40, refunded in full, no webhook. The API answers a
   * repeated cancel with 409 (`Task is already finished.`), and refunds only once; so a cancel is
   * retried like an idempotent call, and when a retry meets that 409 after an earlier attempt got
   * no clear answer, the task is read: if it is cancelled, that is the result.
   */
  async cancel(id: string, options: RequestOptions = {}): Promise<Task> {
    const res = await this.http.request<Task>({
      method: 'POST',
      path: `${taskPath(id)}/cancel`,
      idempotent: true,
      signal: options.signal,
      as: 'json',
      onRetriedConflict: async () => {
        const task = await this.get(id, options);
        return task.status === 40 ? task : undefined;
      },
    });
    return res.data;
  }

  /**
   * `POST /api/tasks/{id}/read-token`: a short-lived token (`ttlSeconds` 60 to 86400, default 900)
   * that reads this one task, for a web page: hand it to the browser, which follows the task with
   * `watchTask` from `@taskapi/client/browser` and never sees the API key. Minting holds no state, so
   * it is retried like a read.
   */
  async createReadToken(id: string, options: RequestOptions & { ttlSeconds?: number } = {}): Promise<ReadToken> {
    const body = options.ttlSeconds === undefined ? undefined : { ttl_seconds: options.ttlSeconds };
    const res = await this.http.request<ReadToken>({ method: 'POST', path: `${taskPath(id)}/read-token`, body, idempotent: true, signal: options.signal, as: 'json' });
    return res.data;
  }

  /**
   * `POST /api/tasks/cancel`: cancels many tasks with one request, each as `cancel` does (refunded
   * in full, no webhook): the tasks of `ids` (1 to 1000; `results` says what became of each, in
   * order), or every non-terminal task of the account matching `filter` (`kind`, `status` 0 or 10,
   * `fairness_key`). Retried like an idempotent call: a retry cancels nothing twice.
   */
  async cancelMany(target: BulkCancelRequest, options: RequestOptions = {}): Promise<BulkCancelResult> {
    const res = await this.http.request<BulkCancelResult>({ method: 'POST', path: '/api/tasks/cancel', body: target, idempotent: true, signal: options.signal, as: 'json' });
    return res.data;
  }

  /**
   * Resolves once the task is terminal (20, 30 or 40). Long-polls `GET /api/tasks/{id}` with
   * `Prefer: wait=N` (50 s by default; the API answers as soon as the task finishes), so waiting
   * costs about one request a minute. A poll cut by a proxy (504) or left unanswered is simply
   * repeated, without using up `maxRetries`. Rejects with `TaskWaitTimeoutError` after
   * `timeoutMs`, or with the signal's reason when aborted.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<Task> {
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new TypeError('wait() timeoutMs must be a positive, finite number of milliseconds.');
    const pollSeconds = options.longPollSeconds === undefined ? this.longPollSeconds : checkLongPollSeconds(options.longPollSeconds);
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    const controller = new AbortController();
    const expired = new TaskWaitTimeoutError(id, timeoutMs ?? 0, undefined);
    // Capped: a timer beyond 2³¹−1 ms (about 24.8 days) would fire at once.
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(expired), Math.min(timeoutMs, MAX_TIMER_MS));
    const onAbort = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let last: Task | undefined;
    try {
      for (let unsupported = 0, cut = 0; ; ) {
        const seconds = Math.max(1, Math.min(pollSeconds, Math.ceil((deadline - Date.now()) / 1000)));
        const started = Date.now();
        let res;
        try {
          res = await this.http.request<Task>({
            method: 'GET',
            path: taskPath(id),
            headers: { prefer: `wait=${seconds}` },
            idempotent: true,
            longPoll: true,
            timeoutMs: Math.max(this.http.options.timeoutMs, seconds * 1000 + LONG_POLL_GRACE_MS),
            signal: controller.signal,
            as: 'json',
          });
        } catch (err) {
          if (controller.signal.aborted || !isCutLongPoll(err)) throw err;
          // Poll again (bounded by timeoutMs and the signal); pause only when the cut came early,
          // so a proxy answering 504 at once is not hammered.
          if (Date.now() - started < (seconds * 1000) / 2) await sleep(Math.min(5_000, 1_000 * 2 ** cut++), controller.signal);
          continue;
        }
        last = res.data;
        if (TERMINAL_STATUSES.includes(last.status)) return last;
        // A server that did not wait (no `Preference-Applied`): poll, slowing down to every 5 s.
        if (!res.headers.get('preference-applied')) await sleep(Math.min(5_000, 1_000 * 2 ** unsupported++), controller.signal);
      }
    } catch (err) {
      if (controller.signal.reason === expired) throw new TaskWaitTimeoutError(id, timeoutMs ?? 0, last);
      throw err;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * `GET /api/tasks/{id}/events`: the task as it changes, as an async iterable: the current state
   * at once, then each status change and progress change (`progress`, at most twice a second),
   * ending after a terminal task (20, 30, 40):
   * `for await (const task of api.tasks.events(id)) console.log(task.status, task.progress)`.
   * A dropped connection is reopened (short backoff, `maxReconnects` times in a row); a 4xx
   * other than 429 (unknown task, bad key) is thrown as `TaskApiError`; when `signal` aborts, the
   * connection is closed and the iteration rejects with the signal's reason. Leaving the loop
   * early (`break`) closes the connection too.
   */
  events(id: string, options: EventsOptions = {}): AsyncGenerator<Task, void, undefined> {
    const path = `${taskPath(id)}/events`;
    return taskEvents((signal) => this.http.openStream(path, signal), options);
  }

  /** `GET /api/tasks`: one page, newest first. Most callers want `list()`, which follows the pages. */
  async listPage<K extends TaskKind = TaskKind>(options: ListOptions<K> = {}): Promise<Omit<TaskList, 'data'> & { data: Array<TaskOf<K>> }> {
    const status = options.status === undefined ? undefined : typeof options.status === 'number' ? String(options.status) : options.status.join(',');
    const res = await this.http.request<Omit<TaskList, 'data'> & { data: Array<TaskOf<K>> }>({
      method: 'GET',
      path: '/api/tasks',
      query: { kind: options.kind, status, fairness_key: options.fairnessKey, limit: options.limit === undefined ? undefined : String(options.limit), cursor: options.cursor },
      idempotent: true,
      signal: options.signal,
      as: 'json',
    });
    return res.data;
  }

  /**
   * Every task matching the filters, newest first, fetching the next page (`next_cursor`) when the
   * previous one is used up: `for await (const task of api.tasks.list({ status: 20 })) { … }`.
   */
  async *list<K extends TaskKind = TaskKind>(options: ListOptions<K> = {}): AsyncGenerator<TaskOf<K>, void, undefined> {
    let cursor = options.cursor;
    do {
      const page = await this.listPage({ ...options, cursor });
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }
}

/** A v4 UUID; browsers offer `crypto.randomUUID` only on https pages, `getRandomValues` everywhere. */
function randomUuid(): string {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
