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
  /** The task's `traceparent` (docs/architecture.md, "Tracing"): its job's producer span is made in that trace. */
  traceParent?: string | undefined;
  /** Seconds: within its account and kind, placed as if created that much earlier (default 0). */
  priority?: number | null | undefined;
  /** When it expires if it has not started (the scheduler never releases it after that). */
  expiresAt?: Date | null | undefined;
  /** Its account's tasks of a kind take turns across fairness keys (none: a group of their own). */
  fairnessKey?: string | null | undefined;
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
  /** The task's `traceparent`: a hand-back's or a retry's job has its producer span in the task's trace. */
  traceParent?: string | undefined;
}

/** What re-releasing a run needs: its task and the release it was (a hand-back or retry of a later release changes nothing). */
export type RunRelease = Pick<TaskRunRef, 'kind' | 'publicId' | 'accountId' | 'release' | 'traceParent'>;

/** Idle slots of one worker process, per kind it runs. */
export type IdleSlots = Partial<Record<TaskKind, number>>;

/**
 * What a worker tells the scheduler with each call: its idle slots per kind (slots not running a
 * run whose start it has reported, in this report or before) and the runs it started since its
 * previous report. Tasks are released only for idle slots; a released task holds the slot it was
 * released for until its start is reported, so starts may wait for the worker's next call.
 */
export interface WorkerReport {
  /** Unique per worker process. */
  workerId: string;
  idle: IdleSlots;
  started: readonly TaskRunRef[];
}

/** What the scheduler holds for one task (the states are in commands/includes/state.lua). */
export interface SchedulerRecord {
  state: 'pending' | 'ready' | 'active' | 'delayed';
  kind: string;
  accountId: string;
  /** The latest release number (0 before the first release). */
  release: number;
}

/** Queue-wide figures of one kind, for autoscaling and alerts (released jobs are BullMQ's to count). */
export interface KindLoad {
  /** Waiting in their accounts' lines, that could start as soon as a worker slot frees. */
  runnable: number;
  /** Waiting only because their account is at its cap of running tasks. */
  heldByCap: number;
  /** Creation time (Unix ms) of the oldest runnable task; undefined when there is none. */
  oldestWaitingCreatedMs: number | undefined;
  /** Redis's clock when this was read (Unix ms), to turn the above into an age. */
  nowMs: number;
}

/** Where a queued task stands (docs/api.md, "Queue position"). */
export interface TaskPosition {
  state: SchedulerRecord['state'];
  /** How many of its account's pending tasks of its kind and fairness key start before it (0 once released). */
  ahead: number;
  /** Its account is at its cap of running tasks. */
  heldByCap: boolean;
}

/** A task waiting in its account's line (operators' views). */
export interface WaitingTask {
  publicId: string;
  accountId: string;
  fairnessKey: string | null;
  createdAt: Date;
  /** Seconds it was placed earlier than its creation (its priority). */
  priority: number;
  expiresAt: Date | null;
  heldByCap: boolean;
}

/** One account's tasks of a kind, for `npm run admin -- queues`. */
export interface AccountQueue {
  accountId: string;
  running: number;
  waiting: number;
  /** Its running tasks of every kind, and its cap on them. */
  runningAllKinds: number;
  cap: number;
}

/** One account's tasks of one kind and fairness key (null: none). */
export interface GroupLoad {
  kind: string;
  fairnessKey: string | null;
  waiting: number;
  running: number;
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
  /**
   * Tasks join their accounts' lines (already known ones are left as they are), and any released
   * for an idle slot get their job. Returns how many joined. With `queued`, it answers once the
   * tasks are in their lines and hands over the adding of the released jobs (a failure there is
   * the sweeper's to repair: it re-adds a released task's missing job).
   */
  submit(kind: TaskKind, tasks: readonly NewTask[], opts?: { queued?: (jobs: Promise<void>) => void }): Promise<number>;
  /** `submit`, also answering where each task stands once in its line (released ones: ahead 0). */
  submitAndPlace(kind: TaskKind, tasks: readonly NewTask[], opts?: { queued?: (jobs: Promise<void>) => void }): Promise<{ joined: number; positions: Map<string, TaskPosition> }>;
  /** A worker's report alone: runs it started, its idle slots (at least every few seconds; a worker not heard from for 10 s is taken for gone). */
  report(report: WorkerReport): Promise<void>;
  /** The task ended, or its run found nothing to do: it leaves the scheduler and frees its place. */
  done(publicId: string, report?: WorkerReport): Promise<void>;
  /**
   * A run handed back unfinished (a worker shutting down): the task keeps its place (still counted
   * as running) and is released again at once, to the head of its kind's queue. Only the task's
   * current release (`run.release`) can be handed back: a late or repeated one changes nothing.
   */
  handBack(run: RunRelease, report?: WorkerReport): Promise<void>;
  /**
   * A transient failure: the task runs again after `delayMs`, still counted as running, ahead of its
   * account's other tasks (for the current release only, as `handBack`).
   */
  retryLater(run: RunRelease, delayMs: number, report?: WorkerReport): Promise<void>;
  /** A worker stopping: its slots take no more work. */
  leave(workerId: string): Promise<void>;
  /** A cancelled task leaves its line (or the queue, when it was released) at once. */
  cancel(kind: TaskKind, publicId: string): Promise<void>;
  /** Releases retries that are due and anything that waits for a free slot. */
  tick(): Promise<void>;
  /** Rebuilds the running counts from the tasks in service (the sweeper's repair of lost counts). Returns how many accounts changed. */
  recount(): Promise<number>;
  /** Replaces every account's own cap (accounts not in `caps` take the default). Returns how many changed. */
  setCaps(caps: ReadonlyMap<string, number>): Promise<number>;
  /** What the scheduler holds for each of these tasks (unknown ones are left out). */
  lookup(publicIds: readonly string[]): Promise<Map<string, SchedulerRecord>>;
  /** Tasks of the kind counted as running (to find those whose end was never reported). */
  inService(kind: TaskKind): Promise<string[]>;
  load(): Promise<Map<TaskKind, KindLoad>>;
  accountLoad(accountId: string): Promise<AccountLoad>;
  /** Cancelled tasks of one kind leave their lines (or the queue) at once, in one call per batch. */
  cancelMany(kind: TaskKind, publicIds: readonly string[]): Promise<void>;
  /** Where each of these tasks stands (unknown ones are left out). */
  positions(publicIds: readonly string[]): Promise<Map<string, TaskPosition>>;
  /** A page of a kind's waiting tasks: accounts served first, first; each account's in creation order. */
  waiting(kind: TaskKind, offset: number, count: number): Promise<{ total: number; tasks: WaitingTask[] }>;
  /** Every account with tasks of the kind running or waiting. */
  accountsOf(kind: TaskKind): Promise<AccountQueue[]>;
  /** One account's waiting and running tasks by kind and fairness key. */
  accountGroups(accountId: string): Promise<GroupLoad[]>;
}
