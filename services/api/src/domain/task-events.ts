// A task's event stream (`GET /api/tasks/{publicId}/events` and the console's): the task JSON at
// once, again on every status change and (at most twice a second) on progress changes, ending with
// the terminal state (docs/architecture.md, "Progress and task events"). The stream follows its
// task before reading it, so no change slips between; it is woken by the task's pub/sub messages
// (`TaskWaiters.follow`) and reads Redis (and, on a status change, the read cache or PostgreSQL)
// only then, never on a timer. The HTTP layer writes what it sends (`TaskEventSink`).
import { isTerminalStatus, TaskStatus } from '@taskapi/domain';
import type { Logger } from '@taskapi/logger';
import { ApiError } from '../errors';
import type { TaskReader, TaskSnapshot } from './read-task';
import type { Follower, TaskChange, TaskWaiters } from './task-waiters';

/** Timings of task event streams. */
export interface TaskEventTimings {
  /** A keep-alive comment is sent this often, in milliseconds, so proxies do not cut an idle stream. Default 15000. */
  keepAliveMs: number;
  /**
   * Least time, in milliseconds, between an event and the next one sent for a progress change
   * (status changes are sent at once). Default 500: at most 2 progress events a second.
   */
  progressIntervalMs: number;
}

export const DEFAULT_TASK_EVENT_TIMINGS: Readonly<TaskEventTimings> = Object.freeze({ keepAliveMs: 15_000, progressIntervalMs: 500 });

/** Where a stream's events go; the HTTP layer writes them as server-sent events. */
export interface TaskEventSink {
  /** One event: the task JSON. */
  task(json: string): void;
  /** A comment that keeps the connection busy. */
  keepAlive(): void;
  /** The stream is over (terminal state sent, shutdown, or a read failed): the server closes it. */
  end(): void;
}

/** The task JSON of a snapshot, with the file URLs of the route that streams it. */
export type RenderTask = (task: TaskSnapshot) => Promise<string> | string;

export interface TaskEventDeps {
  taskReader: TaskReader;
  taskWaiters: TaskWaiters;
  logger: Logger;
  timings: TaskEventTimings;
}

/**
 * One open stream: `open` follows the task and reads it (throwing the `ApiError` its request
 * answers with); `start` sends the first event and goes on until the terminal state, shutdown, a
 * failed read or `stop` (the client went away).
 */
export class TaskEventStream {
  private follower: Follower | undefined;
  private sink: TaskEventSink | undefined;
  private current: TaskSnapshot | undefined;
  private firstText = '';
  private lastSent: string | undefined;
  private lastSentAt = -Infinity;
  /** A status change or a recheck: the whole task is read again. */
  private readPending = false;
  /** A progress change: its Redis key is read again (once the interval allows). */
  private progressPending = false;
  private released = false;
  private busy = false;
  private stopped = false;
  private progressTimer: NodeJS.Timeout | undefined;
  private keepAliveTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly deps: TaskEventDeps,
    private readonly accountId: string,
    private readonly publicId: string,
    private readonly render: RenderTask,
  ) {}

  /**
   * Follows the task, then reads it. Throws `TASK_NOT_FOUND` (unknown, or another account's task),
   * `TOO_MANY_TASK_STREAMS` (the account holds its limit of held requests on this process),
   * `TASK_STREAMS_UNAVAILABLE` (the process holds its limit, or is shutting down), or what the read
   * threw (Redis or PostgreSQL unavailable).
   */
  static async open(deps: TaskEventDeps, accountId: string, publicId: string, render: RenderTask): Promise<TaskEventStream> {
    const stream = new TaskEventStream(deps, accountId, publicId, render);
    const follower = deps.taskWaiters.follow(accountId, publicId, (change) => stream.hear(change));
    if (typeof follower === 'string') throw new ApiError(follower === 'account' ? 'TOO_MANY_TASK_STREAMS' : 'TASK_STREAMS_UNAVAILABLE');
    stream.follower = follower;
    try {
      const task = await deps.taskReader.readCurrent(accountId, publicId);
      if (!task) throw new ApiError('TASK_NOT_FOUND');
      stream.current = task;
      stream.firstText = await render(task);
    } catch (err) {
      stream.stop();
      throw err;
    }
    return stream;
  }

  /** Sends the task as read by `open`, then follows it; ends at once when it is terminal. */
  start(sink: TaskEventSink): void {
    if (this.stopped) return;
    this.sink = sink;
    this.send(this.firstText);
    if (this.released || isTerminalStatus(this.current!.row.status)) {
      this.finish();
      return;
    }
    this.keepAliveTimer = setInterval(() => sink.keepAlive(), this.deps.timings.keepAliveMs);
    this.pump();
  }

  /** Stops following (idempotent): the client went away, or the stream ended. Sends nothing. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.progressTimer);
    clearInterval(this.keepAliveTimer);
    this.follower?.end();
  }

  private hear(change: TaskChange): void {
    if (change === 'released') {
      // Shutdown: the client reconnects to a replica that stays.
      this.released = true;
      if (this.sink) this.finish();
      return;
    }
    if (change === 'progress') this.progressPending = true;
    else this.readPending = true;
    this.pump();
  }

  /** Does the next read the stream owes, one at a time: a whole read first, then progress when its interval allows. */
  private pump(): void {
    if (this.busy || this.stopped || !this.sink) return;
    if (this.readPending) {
      // A whole read carries the progress too.
      this.readPending = false;
      this.progressPending = false;
      void this.step(() => this.deps.taskReader.readCurrent(this.accountId, this.publicId));
      return;
    }
    if (!this.progressPending) return;
    const wait = this.lastSentAt + this.deps.timings.progressIntervalMs - Date.now();
    if (wait > 0) {
      // The trailing send: whatever the progress is when the interval ends.
      this.progressTimer ??= setTimeout(() => {
        this.progressTimer = undefined;
        this.pump();
      }, wait);
      return;
    }
    this.progressPending = false;
    void this.step(() => this.readProgress());
  }

  /** A running task's progress needs its Redis key only; a task not known to run is read whole. */
  private async readProgress(): Promise<TaskSnapshot | null> {
    const row = this.current!.row;
    if (row.status !== TaskStatus.processing) return this.deps.taskReader.readCurrent(this.accountId, this.publicId);
    return { row, progress: await this.deps.taskReader.readProgress(this.accountId, row), queue: null };
  }

  private async step(read: () => Promise<TaskSnapshot | null>): Promise<void> {
    this.busy = true;
    try {
      const task = await read();
      if (this.stopped) return;
      // Tasks are never deleted; should one vanish, there is nothing left to follow.
      if (!task) {
        this.finish();
        return;
      }
      this.current = task;
      const text = await this.render(task);
      if (this.stopped) return;
      if (text !== this.lastSent) this.send(text);
      if (isTerminalStatus(task.row.status)) {
        this.finish();
        return;
      }
    } catch (err) {
      // Headers are sent: no error answer is possible. The client reconnects and reads afresh.
      this.deps.logger.warn('task event stream ended: its task could not be read', { public_id: this.publicId, error: err });
      this.finish();
      return;
    } finally {
      this.busy = false;
    }
    this.pump();
  }

  private send(text: string): void {
    this.lastSent = text;
    this.lastSentAt = Date.now();
    this.sink!.task(text);
  }

  private finish(): void {
    if (this.stopped) return;
    this.stop();
    this.sink?.end();
  }
}
