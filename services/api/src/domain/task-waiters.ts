import { TASK_CHANGED_CHANNEL, TASK_FINISHED_CHANNEL } from '@taskapi/domain';
import type { Logger } from '@taskapi/logger';
import { PubSubFanout, type FanoutEvent, type RedisClient } from '@taskapi/service';

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

/**
 * What a request following a task hears: its status changed (terminal or not), its progress
 * changed, the subscription came back after a reconnect (`recheck`: changes may have been missed),
 * or the process is shutting down (`released`, the last one it hears).
 */
export type TaskChange = 'status' | 'progress' | 'recheck' | 'released';

export interface Follower {
  /** Stops listening and frees the request's place (idempotent). */
  end(): void;
}

/** Why a request could not be held: its account holds its limit, the process holds its limit, or it is shutting down. */
export type HoldRefusal = 'account' | 'process' | 'closed';

/** Requests one process holds at most, and at most per account (so one account cannot fill them all). */
export const MAX_WAITERS = 10_000;
export const MAX_WAITERS_PER_ACCOUNT = 1_000;

// Listens for every recheck, under a key no message has (message keys are public ids).
const PROCESS_KEY = '';

/**
 * The requests this process holds open on a task: `Prefer: wait` requests (`register`) and task
 * event streams (`follow`), counted together against one limit per process and one per account.
 * One Redis subscription per process (the task channels, through `PubSubFanout`) is fanned out to
 * them by public id, so a held request costs a map entry (and a wait its timer), never a database
 * query or a Redis command while nothing happens to its task.
 */
export class TaskWaiters {
  private fanout: PubSubFanout | undefined;
  private readonly byAccount = new Map<string, number>();
  /** Ends each held request with `released` (shutdown). */
  private readonly releases = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly maxWaiters = MAX_WAITERS,
    private readonly maxPerAccount = MAX_WAITERS_PER_ACCOUNT,
  ) {}

  /** Subscribes `subscriber` (the process's dedicated pub/sub connection) to the task channels. */
  async listen(subscriber: RedisClient, logger: Logger): Promise<void> {
    const fanout = new PubSubFanout(subscriber, [TASK_FINISHED_CHANNEL, TASK_CHANGED_CHANNEL], (_channel, message) => message.split(' ')[1] || null, logger);
    // After a reconnect, events published while the connection was down are lost: once the
    // subscription is confirmed again every held request reads its task again (terminal waits
    // answer, the others wait on; streams send the state they find). No new wait starts until then.
    fanout.listen(PROCESS_KEY, (event) => {
      if (event.kind === 'recheck') logger.warn('held task requests re-checking their tasks after a Redis subscriber reconnect', { held: this.size });
    });
    await fanout.start();
    this.fanout = fanout;
  }

  /** Requests held right now (a gauge for tests and metrics). */
  get size(): number {
    return this.releases.size;
  }

  /**
   * Registers a wait for `publicId`, ending after `timeoutMs` at the latest. Call it *before*
   * reading the task, so its terminal event cannot slip between the read and the wait.
   * Null when this process cannot wait (no live subscription, too many held requests in all or for
   * this account, shutting down): the caller answers at once, without `Preference-Applied`.
   */
  register(accountId: string, publicId: string, timeoutMs: number): Waiter | null {
    if (!this.fanout?.live) return null;
    let resolve!: (reason: WakeReason) => void;
    const woken = new Promise<WakeReason>((r) => (resolve = r));
    const hold = this.hold(accountId, publicId, (event) => {
      if (event.kind === 'recheck') wake('recheck');
      else if (event.channel === TASK_FINISHED_CHANNEL) wake('finished');
    }, () => wake('released'));
    if (typeof hold === 'string') return null;
    const wake = (reason: WakeReason) => {
      if (!hold.end()) return;
      clearTimeout(timer);
      resolve(reason);
    };
    const timer = setTimeout(() => wake('timeout'), timeoutMs);
    return { woken, end: (reason = 'released') => wake(reason) };
  }

  /**
   * Follows `publicId` for an event stream: `onChange` hears each change of the task until `end()`
   * (after `released`, the stream must end). Call it *before* reading the task, so no change slips
   * between the read and the stream. Refused when too many requests are held (in all or for this
   * account) or the process is shutting down. Accepted while the subscription is down: the stream
   * hears `recheck` once it is back.
   */
  follow(accountId: string, publicId: string, onChange: (change: TaskChange) => void): Follower | HoldRefusal {
    const hold = this.hold(
      accountId,
      publicId,
      (event) => onChange(event.kind === 'recheck' ? 'recheck' : isStatusChange(event.channel, event.message) ? 'status' : 'progress'),
      () => onChange('released'),
    );
    if (typeof hold === 'string') return hold;
    return { end: () => void hold.end() };
  }

  /** Shutdown: every held request is released now (waits answer with the current state, streams end), and none starts. */
  close(): void {
    this.closed = true;
    for (const release of [...this.releases]) release();
  }

  /**
   * Takes a place for one request on `publicId` and listens for its messages; `end()` gives both
   * back and is true only the first time. `onRelease` runs at shutdown, before the place is given back.
   */
  private hold(
    accountId: string,
    publicId: string,
    onEvent: (event: FanoutEvent) => void,
    onRelease: () => void,
  ): { end(): boolean } | HoldRefusal {
    if (this.closed || !this.fanout) return 'closed';
    if (this.releases.size >= this.maxWaiters) return 'process';
    const ofAccount = this.byAccount.get(accountId) ?? 0;
    if (ofAccount >= this.maxPerAccount) return 'account';
    this.byAccount.set(accountId, ofAccount + 1);
    let held = true;
    const unlisten = this.fanout.listen(publicId, (event) => {
      if (held) onEvent(event);
    });
    const end = (): boolean => {
      if (!held) return false;
      held = false;
      unlisten();
      this.releases.delete(release);
      const left = (this.byAccount.get(accountId) ?? 1) - 1;
      if (left === 0) this.byAccount.delete(accountId);
      else this.byAccount.set(accountId, left);
      return true;
    };
    const release = () => {
      onRelease();
      end();
    };
    this.releases.add(release);
    return { end };
  }
}

/** A message about a status (terminal, or `account public_id status` on the change channel), not a progress value. */
function isStatusChange(channel: string, message: string): boolean {
  return channel === TASK_FINISHED_CHANNEL || message.split(' ').length >= 3;
}
