// Bull Board's window onto the tasks that are not BullMQ jobs yet: those waiting in their accounts'
// lines in the fair scheduler (docs/fair-scheduling.md). One board queue per kind, read-only,
// through Bull Board's own adapter interface (`BaseAdapter`): its "waiting" list is the kind's
// line, accounts served first first, each account's tasks in creation order; each entry shows the
// account, the fairness key, the priority, the age and the expiry.
import { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type { JobCounts, JobStatus, QueueJob, QueueJobJson, QueueMetrics, Status } from '@bull-board/api/typings/app';
import type { TaskScheduler, WaitingTask } from '@taskapi/scheduler';
import type { TaskKind } from '@taskapi/task-kinds';

/** Found by paging the line: the board's job page asks for one waiting task by id. */
const FIND_PAGE = 500;
const FIND_LIMIT = 20_000;

const readOnly = () => Promise.reject(new Error("the accounts' lines are read-only"));

/** A waiting task as a board job (read-only). */
function asJob(kind: TaskKind, t: WaitingTask, now: number): QueueJob {
  const json: QueueJobJson = {
    id: t.publicId,
    name: kind,
    progress: 0,
    attemptsMade: 0,
    timestamp: t.createdAt.getTime(),
    failedReason: '',
    stacktrace: null,
    data: {
      account_id: t.accountId,
      fairness_key: t.fairnessKey,
      priority: t.priority,
      age_seconds: Math.max(0, Math.round((now - t.createdAt.getTime()) / 1000)),
      expires_at: t.expiresAt?.toISOString() ?? null,
      held_by_account_cap: t.heldByCap,
    },
    returnvalue: null,
    opts: {},
  };
  return {
    opts: {},
    promote: readOnly,
    remove: readOnly,
    retry: readOnly,
    toJSON: () => json,
    getState: async () => 'waiting',
  };
}

export class SchedulerLinesAdapter extends BaseAdapter {
  constructor(
    private readonly kind: TaskKind,
    private readonly scheduler: Pick<TaskScheduler, 'waiting'>,
    private readonly redisInfo: () => Promise<string>,
  ) {
    super('bullmq', {
      readOnlyMode: true,
      displayName: `${kind}: waiting in accounts' lines`,
      description:
        "Tasks not released to a worker yet, in the order the fair scheduler serves their accounts (read-only). Each shows its account, " +
        'fairness key, priority, age and expiry; released and running tasks are in the kind\'s queue.',
    });
  }

  getName(): string {
    return `{lines-${this.kind}}`;
  }

  async getJobCounts(): Promise<JobCounts> {
    const { total } = await this.scheduler.waiting(this.kind, 0, 0);
    return { waiting: total, active: 0, completed: 0, failed: 0, delayed: 0, paused: 0, prioritized: 0, 'waiting-children': 0 };
  }

  async getJobs(statuses: JobStatus[], start = 0, end = 9): Promise<QueueJob[]> {
    if (!statuses.includes('waiting')) return [];
    const { tasks } = await this.scheduler.waiting(this.kind, start, Math.max(0, end - start + 1));
    const now = Date.now();
    return tasks.map((t) => asJob(this.kind, t, now));
  }

  async getJob(id: string): Promise<QueueJob | undefined> {
    for (let offset = 0; offset < FIND_LIMIT; offset += FIND_PAGE) {
      const { total, tasks } = await this.scheduler.waiting(this.kind, offset, FIND_PAGE);
      const found = tasks.find((t) => t.publicId === id);
      if (found) return asJob(this.kind, found, Date.now());
      if (offset + FIND_PAGE >= total) return undefined;
    }
    return undefined;
  }

  getStatuses(): Status[] {
    return ['latest', 'waiting'];
  }

  getJobStatuses(): JobStatus[] {
    return ['waiting'];
  }

  getRedisInfo(): Promise<string> {
    return this.redisInfo();
  }

  async getJobLogs(): Promise<string[]> {
    return [];
  }

  async getMetrics(): Promise<QueueMetrics> {
    return { meta: { count: 0, prevTS: 0, prevCount: 0 }, data: [], count: 0 };
  }

  async isPaused(): Promise<boolean> {
    return false;
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return null;
  }

  async getJobSchedulers(): Promise<[]> {
    return [];
  }

  async getJobSchedulersCount(): Promise<number> {
    return 0;
  }

  clean = readOnly;
  addJob = readOnly;
  pause = readOnly;
  resume = readOnly;
  empty = readOnly;
  obliterate = readOnly;
  promoteAll = readOnly;
  removeJobScheduler = readOnly;
  updateJobScheduler = readOnly;
  runJobSchedulerNow = readOnly;
  setGlobalConcurrency = readOnly;
}
