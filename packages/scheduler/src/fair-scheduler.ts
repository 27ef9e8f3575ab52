import type { Cluster, Redis } from 'ioredis';
import { TASK_KINDS, isTaskKind, type TaskKind } from '@taskapi/task-kinds';
import type { TaskQueues, TaskRun } from '@taskapi/queue';
import { SCHEDULER_SCRIPT } from './script';
import type { AccountLoad, KindLoad, NewTask, SchedulerRecord, TaskRunRef, TaskScheduler, WorkerReport } from './task-scheduler';

/** Every scheduling key starts with this; its hash tag keeps them in one Redis Cluster slot. */
export const SCHEDULER_PREFIX = 'taskapi:{sched}:';

/** Caps and accounts' running counts are packed into the scheduler's scores (see script.ts). */
export const MAX_ACCOUNT_CAP = 10_000;

type SchedulerRedis = (Redis | Cluster) & {
  taskapiScheduler(key: string, ...args: Array<string | number>): Promise<unknown>;
};

export interface FairSchedulerOptions {
  /** The cap of accounts without their own (`ACCOUNT_MAX_RUNNING`). */
  defaultCap: number;
  /** Told about corrupt entries the scheduler dropped (the sweeper restores their tasks). */
  onSkipped?: (publicIds: string[]) => void;
  /** Told when released tasks' jobs could not be added (the sweeper adds them). */
  onQueueError?: (err: Error) => void;
  /** Key prefix; tests give each run its own. */
  prefix?: string;
}

const STATES = { p: 'pending', r: 'ready', a: 'active', d: 'delayed' } as const;

/** Parses a record (`state|kind|account|order|release|created`); undefined when corrupt. */
function parseRecord(text: string): SchedulerRecord | undefined {
  const m = /^([prad])\|([^|]+)\|([^|]+)\|\d+\|(\d+)\|\d+$/.exec(text);
  if (!m) return undefined;
  return { state: STATES[m[1] as keyof typeof STATES], kind: m[2]!, accountId: m[3]!, release: Number(m[4]) };
}

/**
 * The fair scheduler on Redis: one atomic script per event (script.ts), then the released runs are
 * added to their kinds' BullMQ queues. Safe with any number of API and worker replicas.
 */
export class FairScheduler implements TaskScheduler {
  private readonly redis: SchedulerRedis;
  private readonly key: string;
  private readonly common: Array<string | number>;

  constructor(
    redis: Redis | Cluster,
    private readonly queues: Pick<TaskQueues, 'addRuns' | 'removeRun'>,
    private readonly opts: FairSchedulerOptions,
  ) {
    if (!('taskapiScheduler' in redis)) redis.defineCommand('taskapiScheduler', { numberOfKeys: 1, lua: SCHEDULER_SCRIPT });
    this.redis = redis as SchedulerRedis;
    const prefix = opts.prefix ?? SCHEDULER_PREFIX;
    this.key = `${prefix}tasks`;
    this.common = [prefix, Math.min(opts.defaultCap, MAX_ACCOUNT_CAP), TASK_KINDS.join(',')];
  }

  private call(op: string, report: WorkerReport | undefined, ...args: Array<string | number>): Promise<unknown> {
    if (!report) return this.redis.taskapiScheduler(this.key, op, ...this.common, '', '', 0, ...args);
    const idle = Object.entries(report.idle)
      .map(([kind, n]) => `${kind}=${Math.max(0, Math.floor(n))}`)
      .join(',');
    const starts = report.started.flatMap((r) => [r.kind, r.publicId, r.accountId, r.order, r.createdAt.getTime(), r.release]);
    return this.redis.taskapiScheduler(this.key, op, ...this.common, report.workerId, idle, report.started.length, ...starts, ...args);
  }

  /**
   * Runs an operation that may release work, and adds what it released to the queues. The
   * operation's answer stands once the script has run: a job that could not be added is reported
   * to `onQueueError` (the sweeper adds a released task's missing job), never thrown.
   */
  private async releasing(op: string, report: WorkerReport | undefined, ...args: Array<string | number>): Promise<unknown> {
    return this.releasingIn(undefined, op, report, ...args);
  }

  /** `releasing`, adding the runs of the tasks in `traceParents` in their traces. */
  private async releasingIn(traceParents: ReadonlyMap<string, string> | undefined, op: string, report: WorkerReport | undefined, ...args: Array<string | number>): Promise<unknown> {
    const { answer, queued } = await this.releasingInBackground(op, report, args, traceParents);
    await queued.catch((err: unknown) => this.opts.onQueueError?.(err as Error));
    return answer;
  }

  /** `releasing`, answering once the scheduler has decided; `queued` settles when the released runs' jobs are added. */
  private async releasingInBackground(
    op: string,
    report: WorkerReport | undefined,
    args: Array<string | number>,
    traceParents?: ReadonlyMap<string, string>,
  ): Promise<{ answer: unknown; queued: Promise<void> }> {
    const [released, skipped, answer] = (await this.call(op, report, ...args)) as [Array<string | number>, string[], unknown];
    if (skipped.length > 0) this.opts.onSkipped?.(skipped);
    const runs = new Map<TaskKind, TaskRun[]>();
    for (let i = 0; i + 4 < released.length; i += 5) {
      const kind = String(released[i]);
      if (!isTaskKind(kind)) continue;
      const list = runs.get(kind) ?? [];
      const publicId = String(released[i + 1]);
      list.push({ publicId, accountId: String(released[i + 2]), release: Number(released[i + 3]), front: released[i + 4] === 1, traceParent: traceParents?.get(publicId) });
      runs.set(kind, list);
    }
    const queued = runs.size === 0 ? Promise.resolve() : Promise.all([...runs].map(([kind, list]) => this.queues.addRuns(kind, list))).then(() => undefined);
    return { answer, queued };
  }

  async submit(kind: TaskKind, tasks: readonly NewTask[], opts: { queued?: (jobs: Promise<void>) => void } = {}): Promise<number> {
    const args = tasks.flatMap((t) => [t.publicId, t.accountId, t.order, t.createdAt.getTime(), t.releasesUsed ?? 0]);
    // Tasks released by their own submission are added in their own traces; a task released
    // later (a slot freed on a worker) is added outside any, and its run joins its trace from the row.
    const traceParents = new Map<string, string>();
    for (const t of tasks) if (t.traceParent) traceParents.set(t.publicId, t.traceParent);
    const { answer, queued } = await this.releasingInBackground('submit', undefined, [kind, ...args], traceParents);
    if (opts.queued) opts.queued(queued);
    else await queued;
    return Number(answer);
  }

  async report(report: WorkerReport): Promise<void> {
    await this.releasing('report', report);
  }

  async done(publicId: string, report?: WorkerReport): Promise<void> {
    await this.releasing('done', report, publicId);
  }

  async handBack(run: TaskRunRef, report?: WorkerReport): Promise<void> {
    await this.releasingIn(traced(run), 'handback', report, run.publicId, run.release);
  }

  async retryLater(run: TaskRunRef, delayMs: number, report?: WorkerReport): Promise<void> {
    await this.releasingIn(traced(run), 'retry', report, run.publicId, run.release, Math.max(0, Math.round(delayMs)));
  }

  async recount(): Promise<number> {
    return Number(await this.releasing('recount', undefined));
  }

  async leave(workerId: string): Promise<void> {
    await this.releasing('leave', { workerId, idle: {}, started: [] });
  }

  async cancel(kind: TaskKind, publicId: string): Promise<void> {
    const answer = String(await this.releasing('cancel', undefined, publicId));
    // Released but not started: its job leaves the queue now, unless a worker has just taken it
    // (then that worker finds the task cancelled and lets it go).
    const ready = /^r:(\d+)$/.exec(answer);
    if (ready && (await this.queues.removeRun(kind, publicId, Number(ready[1])))) await this.done(publicId);
  }

  async tick(): Promise<void> {
    await this.releasing('tick', undefined);
  }

  async setCaps(caps: ReadonlyMap<string, number>): Promise<number> {
    const args = [...caps].flatMap(([account, cap]) => [account, Math.min(Math.max(1, Math.floor(cap)), MAX_ACCOUNT_CAP)]);
    return Number(await this.releasing('caps', undefined, ...args));
  }

  async lookup(publicIds: readonly string[]): Promise<Map<string, SchedulerRecord>> {
    const found = new Map<string, SchedulerRecord>();
    if (publicIds.length === 0) return found;
    const texts = (await this.call('lookup', undefined, ...publicIds)) as Array<string | null>;
    texts.forEach((text, i) => {
      const record = text === null ? undefined : parseRecord(text);
      if (record) found.set(publicIds[i]!, record);
    });
    return found;
  }

  async inService(kind: TaskKind): Promise<string[]> {
    return (await this.call('inservice', undefined, kind)) as string[];
  }

  async load(): Promise<Map<TaskKind, KindLoad>> {
    const [rows, now] = (await this.call('inspect', undefined)) as [Array<[string, number, number, string]>, string];
    const nowMs = Number(now);
    const loads = new Map<TaskKind, KindLoad>();
    for (const [kind, runnable, held, oldest] of rows) {
      if (!isTaskKind(kind)) continue;
      loads.set(kind, { runnable, heldByCap: held, oldestWaitingCreatedMs: Number(oldest) > 0 ? Number(oldest) : undefined, nowMs });
    }
    return loads;
  }

  async accountLoad(accountId: string): Promise<AccountLoad> {
    const [running, maxRunning, ...waiting] = (await this.call('account', undefined, accountId)) as number[];
    return { running: running ?? 0, maxRunning: maxRunning ?? this.opts.defaultCap, waiting: waiting.reduce((a, b) => a + b, 0) };
  }
}

/** The run's task and its `traceparent`, when it has one. */
function traced(run: TaskRunRef): ReadonlyMap<string, string> | undefined {
  return run.traceParent ? new Map([[run.publicId, run.traceParent]]) : undefined;
}
