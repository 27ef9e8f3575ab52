import { taskStatusMarkerKey } from '@taskapi/domain';
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
  constructor(private readonly cache: TaskReadCache) {}

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

  /** Keeps a row this process just wrote (a cancellation). */
  remember(accountId: string, row: TaskRow): void {
    this.cache.put(accountId, row);
  }
}
