import type { Cluster, Redis } from 'ioredis';
import { TASK_KINDS, isTaskKind, type TaskKind } from '@taskapi/task-kinds';
import { TASK_QUEUES, taskJobId, type TaskQueues, type TaskRun } from '@taskapi/queue';
import { startSendSpans, type SendSpans } from '@taskapi/telemetry';
import { NO_GROUP, schedulerCommands, type Releasing, type SchedulerScope } from './scheduler-commands';
import type { AccountLoad, AccountQueue, GroupLoad, KindLoad, NewTask, RunRelease, SchedulerRecord, TaskPosition, TaskScheduler, WaitingTask, WorkerReport } from './task-scheduler';

/** Every scheduling key starts with this; its hash tag keeps them in one Redis Cluster slot. */
export const SCHEDULER_PREFIX = 'taskapi:{sched}:';

/** Caps and accounts' running counts are packed into the scheduler's scores (commands/includes/state.lua). */
export const MAX_ACCOUNT_CAP = 10_000;

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

/**
 * The fair scheduler on Redis: one atomic command per event (src/commands/*.lua, called through
 * scheduler-commands.ts), then the released runs are added to their kinds' BullMQ queues. Safe with
 * any number of API and worker replicas.
 */
export class FairScheduler implements TaskScheduler {
  private readonly scope: SchedulerScope;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly queues: Pick<TaskQueues, 'addRuns' | 'removeRun'>,
    private readonly opts: FairSchedulerOptions,
  ) {
    this.scope = { prefix: opts.prefix ?? SCHEDULER_PREFIX, defaultCap: Math.min(opts.defaultCap, MAX_ACCOUNT_CAP), kinds: TASK_KINDS };
  }

  /**
   * Adds what a command released to the queues. The command's answer stands once the script has
   * run: a job that could not be added is reported to `onQueueError` (the sweeper adds a released
   * task's missing job), never thrown; `sent`, the producer spans of what it sends, end with it.
   */
  private async settle<A>(reply: Releasing<A>, sent?: SendSpans): Promise<A> {
    await this.queue(reply).then(
      () => sent?.end(),
      (err: unknown) => {
        sent?.end(err);
        this.opts.onQueueError?.(err as Error);
      },
    );
    return reply.answer;
  }

  /** Adds the released runs' jobs; settles when they are added. */
  private queue(reply: Releasing<unknown>): Promise<void> {
    if (reply.skipped.length > 0) this.opts.onSkipped?.(reply.skipped);
    const runs = new Map<TaskKind, TaskRun[]>();
    for (const r of reply.released) {
      if (!isTaskKind(r.kind)) continue;
      const list = runs.get(r.kind) ?? [];
      list.push({ publicId: r.task, accountId: r.account, release: r.release, front: r.front });
      runs.set(r.kind, list);
    }
    if (runs.size === 0) return Promise.resolve();
    return Promise.all([...runs].map(([kind, list]) => this.queues.addRuns(kind, list))).then(() => undefined);
  }

  async submit(kind: TaskKind, tasks: readonly NewTask[], opts: { queued?: (jobs: Promise<void>) => void } = {}): Promise<number> {
    return (await this.submitAndPlace(kind, tasks, opts)).joined;
  }

  async submitAndPlace(kind: TaskKind, tasks: readonly NewTask[], opts: { queued?: (jobs: Promise<void>) => void } = {}): Promise<{ joined: number; positions: Map<string, TaskPosition> }> {
    // Each task's producer span, in its own trace: from its submission until its job is added, or
    // until it is in its account's line when no slot is free (a freed slot adds the job later).
    const sent = startSendSpans(TASK_QUEUES[kind].name, () => tasks.map((t) => ({ jobId: taskJobId(t.publicId, (t.releasesUsed ?? 0) + 1), parent: t.traceParent })));
    const reply = await schedulerCommands.submit(this.redis, { scope: this.scope, kind, tasks }).catch((err: unknown) => {
      sent.end(err);
      throw err;
    });
    const queued = this.queue(reply);
    if (sent.active) void queued.then(() => sent.end(), (err: unknown) => sent.end(err));
    if (opts.queued) opts.queued(queued);
    else await queued;
    const positions = new Map<string, TaskPosition>();
    for (const [publicId, p] of Object.entries(reply.answer.positions)) {
      positions.set(publicId, { state: reply.released.some((r) => r.task === publicId) ? 'ready' : 'pending', ahead: p.ahead, heldByCap: p.held_by_cap });
    }
    return { joined: reply.answer.joined, positions };
  }

  async report(report: WorkerReport): Promise<void> {
    await this.settle(await schedulerCommands.report(this.redis, { scope: this.scope, report }));
  }

  async done(publicId: string, report?: WorkerReport): Promise<void> {
    // The run's own start, when this report is the first to carry it (a short run), is left out:
    // the end takes the task out of whatever state it is in, and the counts and placements come
    // out the same whether it passed through 'active' first or not (two commands fewer a run:
    // the start's read, ZREM and HSET against the end's own ZREM). A corrupt record is forgotten
    // by the end (every index it could be in) instead of being overwritten by the start first;
    // an unknown task's end answers 'unknown'.
    const own = report?.started.some((r) => r.publicId === publicId);
    const sent = own ? { ...report!, started: report!.started.filter((r) => r.publicId !== publicId) } : report;
    await this.settle(await schedulerCommands.done(this.redis, { scope: this.scope, report: sent, publicId }));
  }

  async handBack(run: RunRelease, report?: WorkerReport): Promise<void> {
    await this.sendAgain(run, () => schedulerCommands.handBack(this.redis, { scope: this.scope, report, publicId: run.publicId, release: run.release }));
  }

  /** The next run is released when the delay is over. */
  async retryLater(run: RunRelease, delayMs: number, report?: WorkerReport): Promise<void> {
    await this.sendAgain(run, () => schedulerCommands.retry(this.redis, { scope: this.scope, report, publicId: run.publicId, release: run.release, delayMs }));
  }

  /**
   * A hand-back's or a retry's command, then what it released (`settle`). The task's next job
   * (release + 1) gets a producer span in its trace, from the call's start, only when the command
   * moved the run: a stale or repeated call sends nothing (docs/architecture.md, "Tracing").
   */
  private async sendAgain(run: RunRelease, command: () => Promise<Releasing<string>>): Promise<void> {
    const startTime = Date.now();
    const reply = await command();
    const moved = reply.answer === 'active' || reply.answer === 'ready';
    const sent = moved ? startSendSpans(TASK_QUEUES[run.kind].name, () => [{ jobId: taskJobId(run.publicId, run.release + 1), parent: run.traceParent }], { startTime }) : undefined;
    await this.settle(reply, sent);
  }

  async recount(): Promise<number> {
    return this.settle(await schedulerCommands.recount(this.redis, { scope: this.scope }));
  }

  async leave(workerId: string): Promise<void> {
    await this.settle(await schedulerCommands.leave(this.redis, { scope: this.scope, report: { workerId, idle: {}, started: [] } }));
  }

  async cancel(kind: TaskKind, publicId: string): Promise<void> {
    const answer = await this.settle(await schedulerCommands.cancel(this.redis, { scope: this.scope, publicId }));
    // Released but not started: its job leaves the queue now, unless a worker has just taken it
    // (then that worker finds the task cancelled and lets it go).
    if (answer.outcome === 'ready' && (await this.queues.removeRun(kind, publicId, answer.release))) await this.done(publicId);
  }

  async tick(): Promise<void> {
    await this.settle(await schedulerCommands.tick(this.redis, { scope: this.scope }));
  }

  async setCaps(caps: ReadonlyMap<string, number>): Promise<number> {
    const pairs = [...caps].map(([account, cap]) => [account, Math.min(Math.max(1, Math.floor(cap)), MAX_ACCOUNT_CAP)] as const);
    return this.settle(await schedulerCommands.setCaps(this.redis, { scope: this.scope, caps: pairs }));
  }

  async lookup(publicIds: readonly string[]): Promise<Map<string, SchedulerRecord>> {
    const found = new Map<string, SchedulerRecord>();
    if (publicIds.length === 0) return found;
    const records = await schedulerCommands.lookup(this.redis, { scope: this.scope, publicIds });
    for (const [publicId, r] of Object.entries(records)) found.set(publicId, { state: r.state, kind: r.kind, accountId: r.account, release: r.release });
    return found;
  }

  async inService(kind: TaskKind): Promise<string[]> {
    return schedulerCommands.inService(this.redis, { scope: this.scope, kind });
  }

  async load(): Promise<Map<TaskKind, KindLoad>> {
    const { kinds, now_ms: nowMs } = await schedulerCommands.inspect(this.redis, { scope: this.scope });
    const loads = new Map<TaskKind, KindLoad>();
    for (const k of kinds) {
      if (!isTaskKind(k.kind)) continue;
      loads.set(k.kind, { runnable: k.runnable, heldByCap: k.held, oldestWaitingCreatedMs: k.oldest_created_ms > 0 ? k.oldest_created_ms : undefined, nowMs });
    }
    return loads;
  }

  async cancelMany(kind: TaskKind, publicIds: readonly string[]): Promise<void> {
    if (publicIds.length === 0) return;
    const results = await this.settle(await schedulerCommands.cancelMany(this.redis, { scope: this.scope, publicIds }));
    // Released but not started: their jobs leave the queue now (see `cancel`).
    const gone: string[] = [];
    for (const r of results) if (r.outcome === 'ready' && (await this.queues.removeRun(kind, r.task, r.release))) gone.push(r.task);
    for (const publicId of gone) await this.done(publicId);
  }

  async positions(publicIds: readonly string[]): Promise<Map<string, TaskPosition>> {
    const found = new Map<string, TaskPosition>();
    if (publicIds.length === 0) return found;
    const records = await schedulerCommands.position(this.redis, { scope: this.scope, publicIds });
    for (const [publicId, p] of Object.entries(records)) found.set(publicId, { state: p.state, ahead: p.ahead, heldByCap: p.held_by_cap });
    return found;
  }

  async waiting(kind: TaskKind, offset: number, count: number): Promise<{ total: number; tasks: WaitingTask[] }> {
    const page = await schedulerCommands.waiting(this.redis, { scope: this.scope, kind, offset: Math.max(0, Math.floor(offset)), count: Math.max(0, Math.floor(count)) });
    return {
      total: page.total,
      tasks: (page.tasks ?? []).map((t) => ({
        publicId: t.task,
        accountId: t.account,
        fairnessKey: t.group === NO_GROUP ? null : t.group,
        createdAt: new Date(t.created_ms),
        priority: Math.round((t.created_ms - t.effective_ms) / 1000),
        expiresAt: t.deadline_ms > 0 ? new Date(t.deadline_ms) : null,
        heldByCap: t.held_by_cap,
      })),
    };
  }

  async accountsOf(kind: TaskKind): Promise<AccountQueue[]> {
    const rows = await schedulerCommands.accounts(this.redis, { scope: this.scope, kind });
    return rows.map((r) => ({ accountId: r.account, running: r.running, waiting: r.waiting, runningAllKinds: r.running_all_kinds, cap: r.cap }));
  }

  async accountGroups(accountId: string): Promise<GroupLoad[]> {
    const byKind = await schedulerCommands.accountGroups(this.redis, { scope: this.scope, accountId });
    return Object.entries(byKind).flatMap(([kind, groups]) =>
      Object.entries(groups).map(([group, g]) => ({ kind, fairnessKey: group === NO_GROUP ? null : group, waiting: g.waiting, running: g.running })),
    );
  }

  async accountLoad(accountId: string): Promise<AccountLoad> {
    const { running, cap, waiting } = await schedulerCommands.account(this.redis, { scope: this.scope, accountId });
    return { running, maxRunning: cap, waiting: Object.values(waiting).reduce((a, b) => a + b, 0) };
  }
}
