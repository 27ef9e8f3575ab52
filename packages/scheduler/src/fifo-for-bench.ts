import type { TaskKind } from '@taskapi/task-kinds';
import { TASK_QUEUES, taskJobId, type TaskQueues, type TaskRun } from '@taskapi/queue';
import { inSendSpans } from '@taskapi/telemetry';
import type { AccountLoad, AccountQueue, GroupLoad, KindLoad, NewTask, RunRelease, SchedulerRecord, TaskPosition, TaskScheduler, WaitingTask } from './task-scheduler';

/**
 * First in, first out, as before the fair scheduler: every task's job goes to its kind's queue when
 * it is created, and workers take the oldest. Only `npm run bench` uses it (`BENCH_FIFO_SCHEDULING`,
 * refused in production), to measure what fairness costs against it in the same run.
 */
export class FifoForBench implements TaskScheduler {
  constructor(private readonly queues: Pick<TaskQueues, 'addRuns' | 'removeRun'>) {}

  async submit(kind: TaskKind, tasks: readonly NewTask[]): Promise<number> {
    // As before the scheduler: the creation answers once its job is added.
    await this.add(
      kind,
      tasks.map((t) => ({ publicId: t.publicId, accountId: t.accountId, release: (t.releasesUsed ?? 0) + 1, traceParent: t.traceParent })),
    );
    return tasks.length;
  }

  /** Adds the runs' jobs, each in a producer span in its task's trace (as the fair scheduler makes them). */
  private add(kind: TaskKind, runs: ReadonlyArray<TaskRun & { traceParent: string | undefined }>): Promise<void> {
    const jobs = () => runs.map((run) => ({ jobId: taskJobId(run.publicId, run.release), parent: run.traceParent }));
    return inSendSpans(TASK_QUEUES[kind].name, jobs, () => this.queues.addRuns(kind, runs));
  }

  async submitAndPlace(kind: TaskKind, tasks: readonly NewTask[]): Promise<{ joined: number; positions: Map<string, TaskPosition> }> {
    return { joined: await this.submit(kind, tasks), positions: new Map() };
  }

  async report(): Promise<void> {}

  async done(): Promise<void> {}

  async handBack(run: RunRelease): Promise<void> {
    await this.add(run.kind, [{ publicId: run.publicId, accountId: run.accountId, release: run.release + 1, front: true, traceParent: run.traceParent }]);
  }

  async retryLater(run: RunRelease, delayMs: number): Promise<void> {
    await this.add(run.kind, [{ publicId: run.publicId, accountId: run.accountId, release: run.release + 1, delayMs, traceParent: run.traceParent }]);
  }

  async cancel(kind: TaskKind, publicId: string): Promise<void> {
    await this.queues.removeRun(kind, publicId, 1);
  }

  async tick(): Promise<void> {}

  async recount(): Promise<number> {
    return 0;
  }

  async leave(): Promise<void> {}

  async setCaps(): Promise<number> {
    return 0;
  }

  async lookup(): Promise<Map<string, SchedulerRecord>> {
    return new Map();
  }

  async inService(): Promise<string[]> {
    return [];
  }

  async load(): Promise<Map<TaskKind, KindLoad>> {
    return new Map();
  }

  async cancelMany(kind: TaskKind, publicIds: readonly string[]): Promise<void> {
    for (const publicId of publicIds) await this.queues.removeRun(kind, publicId, 1);
  }

  async positions(): Promise<Map<string, TaskPosition>> {
    return new Map();
  }

  async waiting(): Promise<{ total: number; tasks: WaitingTask[] }> {
    return { total: 0, tasks: [] };
  }

  async accountsOf(): Promise<AccountQueue[]> {
    return [];
  }

  async accountGroups(): Promise<GroupLoad[]> {
    return [];
  }

  async accountLoad(): Promise<AccountLoad> {
    return { running: 0, maxRunning: 0, waiting: 0 };
  }
}
