import { TaskStatus, taskProgressKey, taskStatusMarkerKey } from '@taskapi/domain';
import type { TaskPosition } from '@taskapi/scheduler';
import type { RedisClient } from '@taskapi/service';
import type { KeyPrincipal } from './principal';
import type { TaskReadCache } from './task-read-cache';
import { taskProgress, type TaskQueue, type TaskRow } from './task-view';

/** `GET /api/tasks/{publicId}` and its files: the reads integrators poll (`rest` is what follows the id). */
const TASK_READ_PATH = /^\/api\/tasks\/(task_[A-Za-z0-9]{22})(\/files\/.*|\/?)$/;

/** A task as the API shows it: its row, its `progress` (see `taskProgress`) and, queued, its place. */
export interface TaskSnapshot {
  row: TaskRow;
  progress: number | null;
  queue: TaskQueue | null;
}

/** Where queued tasks stand, from the scheduler (unknown ones left out). */
export type QueuePositions = (publicIds: readonly string[]) => Promise<Map<string, TaskPosition>>;

/** Values the rate limiter read at `prefetchKeys`, in that order (null: absent). */
export type Prefetched = ReadonlyArray<string | null>;

/**
 * The read path of `GET /api/tasks/{publicId}`, in one place. Clients poll it, so a read is served
 * from an in-process cache whenever the task's status marker in Redis says the cached row is
 * current. The marker, and the progress of a running task, cost no extra round trip: the rate
 * limiter reads them in the same script call (`prefetchKeys` tells the limiter which keys to
 * read; `read` gets what it returned).
 */
export class TaskReader {
  /** Reads of the current state in flight, by task: a crowd of woken waiters shares one. */
  private readonly inFlight = new Map<string, Promise<TaskRow | null>>();

  constructor(
    private readonly cache: TaskReadCache,
    private readonly redis: Pick<RedisClient, 'get' | 'mget'>,
    private readonly positions: QueuePositions = async () => new Map(),
  ) {}

  /**
   * The places of the queued ones among `rows`: one scheduler call (a rank in a sorted set each,
   * however long the line), none when no row is queued. Without Redis, none (`queue` is null).
   */
  async queuesOf(rows: readonly TaskRow[]): Promise<Map<string, TaskQueue>> {
    const queued = rows.filter((r) => r.status === TaskStatus.queued).map((r) => r.public_id);
    if (queued.length === 0) return new Map();
    const found = await this.positions(queued).catch(() => new Map<string, TaskPosition>());
    return new Map([...found].map(([id, p]) => [id, { ahead: p.ahead, heldByAccountCap: p.heldByCap }]));
  }

  private async snapshot(row: TaskRow, progress: number | null): Promise<TaskSnapshot> {
    return { row, progress, queue: row.status === TaskStatus.queued ? ((await this.queuesOf([row])).get(row.public_id) ?? null) : null };
  }

  /**
   * The Redis keys to read along with the rate limit of this request, if it reads one task: its
   * status marker and its progress (a file needs only the marker). All carry the account's hash
   * tag, as the limiter's own keys.
   */
  prefetchKeys(method: string, path: string, accountId: string): readonly string[] | undefined {
    if (method !== 'GET' && method !== 'HEAD') return undefined;
    const match = TASK_READ_PATH.exec(path);
    if (!match) return undefined;
    const publicId = match[1]!;
    const marker = taskStatusMarkerKey(accountId, publicId);
    return match[2]!.startsWith('/files/') ? [marker] : [marker, taskProgressKey(accountId, publicId)];
  }

  /**
   * The caller's task, or null (unknown, or another account's: indistinguishable on purpose).
   * @param prefetched what the limiter read at `prefetchKeys`: the marker, then the progress.
   */
  async read(principal: KeyPrincipal, publicId: string, prefetched: Prefetched | undefined): Promise<TaskSnapshot | null> {
    const row = await this.cache.get(principal.accountId, publicId, markerStatus(prefetched?.[0]));
    return row && this.snapshot(row, taskProgress(row, prefetched?.[1]));
  }

  /**
   * The caller's task as it is now: its status marker and progress fetched afresh (not what the
   * limiter read earlier), then the cache or PostgreSQL. Used by `Prefer: wait` and event streams,
   * after they started listening for the task's events.
   */
  async readCurrent(accountId: string, publicId: string): Promise<TaskSnapshot | null> {
    // One slot on Redis Cluster: both keys carry the account's hash tag.
    const [markerValue, progressValue] = await this.redis.mget(taskStatusMarkerKey(accountId, publicId), taskProgressKey(accountId, publicId));
    const marker = markerStatus(markerValue);
    // Shared only between reads that saw the same marker, so none gets a state older than its own.
    const key = `${accountId} ${publicId} ${marker}`;
    let read = this.inFlight.get(key);
    if (!read) {
      read = this.cache.get(accountId, publicId, marker).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, read);
    }
    const row = await read;
    return row && this.snapshot(row, taskProgress(row, progressValue));
  }

  /** The progress of a task known to be running, from its Redis key alone (no row is read). */
  async readProgress(accountId: string, row: TaskRow): Promise<number | null> {
    return taskProgress(row, await this.redis.get(taskProgressKey(accountId, row.public_id)));
  }

  /**
   * The snapshots of a page of the account's tasks: one MGET for the progress of the running ones,
   * none when no task of the page runs.
   */
  async withProgress(accountId: string, rows: readonly TaskRow[]): Promise<TaskSnapshot[]> {
    const running = rows.filter((r) => r.status === TaskStatus.processing);
    const values = running.length === 0 ? [] : await this.redis.mget(...running.map((r) => taskProgressKey(accountId, r.public_id)));
    const byId = new Map(running.map((r, i) => [r.public_id, values[i]]));
    const queues = await this.queuesOf(rows);
    return rows.map((row) => ({ row, progress: taskProgress(row, byId.get(row.public_id)), queue: queues.get(row.public_id) ?? null }));
  }

  /** Keeps a row this process just wrote (a cancellation). */
  remember(accountId: string, row: TaskRow): void {
    this.cache.put(accountId, row);
  }
}

/** A status marker's value as a status; null when there is none. */
function markerStatus(value: string | null | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}
