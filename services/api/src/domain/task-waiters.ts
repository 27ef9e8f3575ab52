import { parseTaskFinished, TASK_FINISHED_CHANNEL } from '@taskapi/domain';
import type { Logger } from '@taskapi/logger';
import type { RedisClient } from '@taskapi/service';

/** Why a wait ended: the task's terminal event, the deadline, the client went away, or shutdown. */
export type WakeReason = 'finished' | 'timeout' | 'gone' | 'released';

export interface Waiter {
  /** Settles once, with the first reason that happened. */
  readonly woken: Promise<WakeReason>;
  /** Ends the wait (idempotent); call when the request is answered or its client disconnected. */
  end(reason?: WakeReason): void;
}

interface Entry {
  wake(reason: WakeReason): void;
}

/**
 * The `Prefer: wait` requests this process holds, by task. One Redis subscription per process
 * (`TASK_FINISHED_CHANNEL`) is fanned out to them, so a waiting request costs a timer and a map
 * entry, never a database query or a Redis command while it waits.
 */
export class TaskWaiters {
  private readonly byTask = new Map<string, Set<Entry>>();
  private count = 0;
  private subscribed = false;
  private closed = false;

  constructor(private readonly maxWaiters = 10_000) {}

  /** Subscribes `subscriber` (the process's dedicated pub/sub connection) to terminal events. */
  async listen(subscriber: RedisClient, logger: Logger): Promise<void> {
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== TASK_FINISHED_CHANNEL) return;
      const event = parseTaskFinished(message);
      if (event) this.wake(event.publicId);
    });
    let connectedBefore = subscriber.status === 'ready';
    subscriber.on('ready', () => {
      // ioredis subscribes again after a reconnect, but events published meanwhile are lost:
      // every waiter reads its task again (and answers, if it is terminal by now).
      if (connectedBefore) {
        logger.warn('task waiters woken after Redis subscriber reconnect', { waiters: this.count });
        this.wakeAll('released');
      }
      connectedBefore = true;
      this.subscribed = true;
    });
    subscriber.on('close', () => {
      this.subscribed = false;
    });
    await subscriber.subscribe(TASK_FINISHED_CHANNEL);
    this.subscribed = true;
  }

  /** Requests waiting right now (a gauge for tests and metrics). */
  get size(): number {
    return this.count;
  }

  /**
   * Registers a wait for `publicId`, ending after `timeoutMs` at the latest. Call it *before*
   * reading the task, so its terminal event cannot slip between the read and the wait.
   * Null when this process cannot wait (no live subscription, too many waiters, shutting down):
   * the caller answers at once, without `Preference-Applied`.
   */
  register(publicId: string, timeoutMs: number): Waiter | null {
    if (this.closed || !this.subscribed || this.count >= this.maxWaiters) return null;
    let resolve!: (reason: WakeReason) => void;
    const woken = new Promise<WakeReason>((r) => (resolve = r));
    let done = false;
    const entry: Entry = {
      wake: (reason) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const set = this.byTask.get(publicId);
        set?.delete(entry);
        if (set?.size === 0) this.byTask.delete(publicId);
        this.count--;
        resolve(reason);
      },
    };
    const timer = setTimeout(() => entry.wake('timeout'), timeoutMs);
    const set = this.byTask.get(publicId) ?? new Set<Entry>();
    set.add(entry);
    this.byTask.set(publicId, set);
    this.count++;
    return { woken, end: (reason = 'released') => entry.wake(reason) };
  }

  /** Shutdown: every waiter answers now with the task's current state, and no new wait starts. */
  close(): void {
    this.closed = true;
    this.wakeAll('released');
  }

  private wake(publicId: string): void {
    const set = this.byTask.get(publicId);
    if (set) for (const entry of [...set]) entry.wake('finished');
  }

  private wakeAll(reason: WakeReason): void {
    for (const set of [...this.byTask.values()]) for (const entry of [...set]) entry.wake(reason);
  }
}
