import type { TaskKind } from '@taskapi/task-kinds';

/** A task joining the scheduler: created, or restored by the sweeper. */
export interface NewTask {
  publicId: string;
  accountId: string;
  /** The task's database id: creation order, oldest first. */
  order: string;
  createdAt: Date;
  /**
   * Releases of this task already used (their job ids are taken); the next release is one more.
   * 0 for a new task.
   */
  releasesUsed?: number;
}

/** One run of a task, as the worker that took its job knows it. */
export interface TaskRunRef {
  kind: TaskKind;
  publicId: string;
  accountId: string;
  order: string;
  createdAt: Date;
  /** The job's release number (1 for jobs queued before the scheduler). */
  release: number;
}

/** Idle slots of one worker process, per kind it runs: slots not running a task. */
export type IdleSlots = Partial<Record<TaskKind, number>>;

/**
 * A worker's report that comes with a start or an end: how many of its slots of the kind are idle
 * once it is done (the run's own slot counts as idle in an end's report: BullMQ gives it the next
 * job as the run's job ends). Tasks are released only for idle slots.
 */
export interface SlotReport {
  /** Unique per worker process. */
  workerId: string;
  kind: TaskKind;
  idle: number;
}

/** What the scheduler holds for one task (see the states in script.ts). */
export interface SchedulerRecord {
  state: 'pending' | 'ready' | 'active' | 'delayed';
  kind: string;
  accountId: string;
  /** The latest release number (0 before the first release). */
  release: number;
}

/** Queue-wide figures of one kind, for autoscaling and alerts. */
export interface KindLoad {
  /** Released to the kind's BullMQ queue and not started yet. */
  ready: number;
  /** Waiting in their accounts' lines, that could start as soon as a worker slot frees. */
  runnable: number;
  /** Waiting only because their account is at its cap of running tasks. */
  heldByCap: number;
  /** Creation time (Unix ms) of the oldest ready or runnable task; undefined when there is none. */
  oldestWaitingCreatedMs: number | undefined;
  /** Redis's clock when this was read (Unix ms), to turn the above into an age. */
  nowMs: number;
}

/** One account's use of its cap. */
export interface AccountLoad {
  /** Tasks in service (running, released to a worker, or waiting to retry). */
  running: number;
  /** The account's cap in force. */
  maxRunning: number;
  /** Tasks waiting in its lines, all kinds together. */
  waiting: number;
}

/**
 * Decides which task of a kind runs next (docs/fair-scheduling.md). Every component that creates,
 * starts, ends, hands back, retries or cancels a task tells the scheduler, which releases tasks to
 * their kind's BullMQ queue one worker slot at a time.
 */
export interface TaskScheduler {
  /** Tasks join their accounts' lines (already known ones are left as they are). Returns how many joined. */
  submit(kind: TaskKind, tasks: readonly NewTask[]): Promise<number>;
  /** A worker started a run. */
  started(run: TaskRunRef, slot?: SlotReport): Promise<void>;
  /** The task ended, or its run found nothing to do: it leaves the scheduler and frees its place. */
  done(publicId: string, slot?: SlotReport): Promise<void>;
  /**
   * A run handed back unfinished (a worker shutting down): the task keeps its place (still counted
   * as running) and is released again at once, to the head of its kind's queue.
   */
  handBack(run: TaskRunRef, slot?: SlotReport): Promise<void>;
  /** A transient failure: the task runs again after `delayMs`, still counted as running, ahead of its account's other tasks. */
  retryLater(run: TaskRunRef, delayMs: number, slot?: SlotReport): Promise<void>;
  /** A worker's idle slots, every few seconds (a worker not heard from for 10 s is taken for gone). */
  heartbeat(workerId: string, idle: IdleSlots): Promise<void>;
  /** A worker stopping: its slots take no more work. */
  leave(workerId: string): Promise<void>;
  /** A cancelled task leaves its line (or the queue, when it was released) at once. */
  cancel(kind: TaskKind, publicId: string): Promise<void>;
  /** Releases retries that are due and anything that waits for a free slot. */
  tick(): Promise<void>;
  /** Replaces every account's own cap (accounts not in `caps` take the default). Returns how many changed. */
  setCaps(caps: ReadonlyMap<string, number>): Promise<number>;
  /** What the scheduler holds for each of these tasks (unknown ones are left out). */
  lookup(publicIds: readonly string[]): Promise<Map<string, SchedulerRecord>>;
  /** Tasks of the kind counted as running (to find those whose end was never reported). */
  inService(kind: TaskKind): Promise<string[]>;
  load(): Promise<Map<TaskKind, KindLoad>>;
  accountLoad(accountId: string): Promise<AccountLoad>;
}
