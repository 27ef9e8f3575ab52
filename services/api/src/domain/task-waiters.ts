import { parseTaskFinished, TASK_FINISHED_CHANNEL } from '@taskapi/domain';
import type { Logger } from '@taskapi/logger';
import type { RedisClient } from '@taskapi/service';

/**
 * Why a wait ended: the task's terminal event, the deadline, the client went away, shutdown
 * (`released`), or the subscription was re-established after a reconnect and events published
 * meanwhile may be lost (`recheck`: read the task again and, if it is not terminal, wait on).
 */
export type WakeReason = 'finished' | 'timeout' | 'gone' | 'released' | 'recheck';

export interface Waiter {
  /** Settles once, with the first reason that happened. */
  readonly woken: Promise<WakeReason>;
  /** Ends the wait (idempotent); call when the request is answered or its client disconnected. */
  end(reason?: WakeReason): void;
}

interface Entry {
  wake(reason: WakeReason): void;
}

/** Waits one process holds at most, and at most per account (so one account cannot fill them all). */
export const MAX_WAITERS = 10_000;
export const MAX_WAITERS_PER_ACCOUNT = 1_000;

/**
 * The `Prefer: wait` requests this process holds, by task. One Redis subscription per process
 * (`TASK_FINISHED_CHANNEL`) is fanned out to them, so a waiting request costs a timer and a map
 * entry, never a database query or a Redis command while it waits.
 */
export class TaskWaiters {
  private readonly byTask = new Map<string, Set<Entry>>();
  private readonly byAccount = new Map<string, number>();
  private count = 0;
  private subscribed = false;
  private closed = false;

  constructor(
    private readonly maxWaiters = MAX_WAITERS,
    private readonly maxPerAccount = MAX_WAITERS_PER_ACCOUNT,
  ) {}

  /** Subscribes `subscriber` (the process's dedicated pub/sub connection) to terminal events. */
  async listen(subscriber: RedisClient, logger: Logger): Promise<void> {
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== TASK_FINISHED_CHANNEL) return;
      const event = parseTaskFinished(message);
      if (event) this.wake(event.publicId);
    });
    let connectedBefore = subscriber.status === 'ready';
    subscriber.on('ready', () => {
      if (!connectedBefore) {
        connectedBefore = true;
        return;
      }
      // After a reconnect, events published while the connection was down are lost. Once the
      // subscription is confirmed again (ioredis's own resubscribe is sent before 'ready', so this
      // SUBSCRIBE's reply comes after it), every waiter reads its task again: terminal ones answer,
      // the others wait on for the rest of their time. No new wait starts until then.
      subscriber.subscribe(TASK_FINISHED_CHANNEL).then(
        () => {
          this.subscribed = true;
          logger.warn('task waiters re-checking their tasks after a Redis subscriber reconnect', { waiters: this.count });
          this.wakeAll('recheck');
        },
        (err: unknown) => logger.warn('could not subscribe to task events again; waits answer at their deadline', { error: err }),
      );
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
   * Null when this process cannot wait (no live subscription, too many waiters in all or for this
   * account, shutting down):
   * the caller answers at once, without `Preference-Applied`.
   */
  register(accountId: string, publicId: string, timeoutMs: number): Waiter | null {
    if (this.closed || !this.subscribed || this.count >= this.maxWaiters) return null;
    const ofAccount = this.byAccount.get(accountId) ?? 0;
    if (ofAccount >= this.maxPerAccount) return null;
    this.byAccount.set(accountId, ofAccount + 1);
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
        const left = (this.byAccount.get(accountId) ?? 1) - 1;
        if (left === 0) this.byAccount.delete(accountId);
        else this.byAccount.set(accountId, left);
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
