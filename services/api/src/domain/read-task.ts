import { taskStatusMarkerKey } from '@taskapi/domain';
import type { RedisClient } from '@taskapi/service';
import type { KeyPrincipal } from './principal';
import type { TaskReadCache } from './task-read-cache';
import type { TaskRow } from './task-view';

/** `GET /api/tasks/{publicId}` and its files: the reads integrators poll. */
const TASK_READ_PATH = /^\/api\/tasks\/(task_[A-Za-z0-9]{22})(?:\/|$)/;

/**
 * The read path of `GET /api/tasks/{publicId}`, in one place. Clients poll it, so a read is served
 * from an in-process cache whenever the task's status marker in Redis says the cached row is
 * current. The marker costs no extra round trip: the rate limiter reads it in the same script call
 * (`prefetchKey` tells the limiter which key to read; `read` gets what it returned).
 */
export class TaskReader {
  /** Reads of the current state in flight, by task: a crowd of woken waiters shares one. */
  private readonly inFlight = new Map<string, Promise<TaskRow | null>>();

  constructor(
    private readonly cache: TaskReadCache,
    private readonly redis: Pick<RedisClient, 'get'>,
  ) {}

  /** The Redis key to read along with the rate limit of this request, if it reads one task. */
  prefetchKey(method: string, path: string, accountId: string): string | undefined {
    if (method !== 'GET') return undefined;
    const publicId = TASK_READ_PATH.exec(path)?.[1];
    return publicId ? taskStatusMarkerKey(accountId, publicId) : undefined;
  }

  /**
   * The caller's task, or null (unknown, or another account's: indistinguishable on purpose).
   * @param prefetched the value the limiter read at `prefetchKey` (null: no marker).
   */
  read(principal: KeyPrincipal, publicId: string, prefetched: string | null | undefined): Promise<TaskRow | null> {
    const marker = prefetched === null || prefetched === undefined ? null : Number(prefetched);
    return this.cache.get(principal.accountId, publicId, marker);
  }

  /**
   * The caller's task as it is now: its status marker fetched afresh (not the one the limiter read
   * earlier), then the cache or PostgreSQL. Used by `Prefer: wait`, after the waiter is registered.
   */
  async readCurrent(accountId: string, publicId: string): Promise<TaskRow | null> {
    const value = await this.redis.get(taskStatusMarkerKey(accountId, publicId));
    const marker = value === null ? null : Number(value);
    // Shared only between reads that saw the same marker, so none gets a state older than its own.
    const key = `${accountId} ${publicId} ${marker}`;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const read = this.cache.get(accountId, publicId, marker).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, read);
    return read;
  }

  /** Keeps a row this process just wrote (a cancellation). */
  remember(accountId: string, row: TaskRow): void {
    this.cache.put(accountId, row);
  }
}
